import type { AuditAction, AuditRecord } from '../store/records.ts';
import type { ManagementContext, ManagementDeps } from './context.ts';

/** Every reveal and download is recorded before the secret leaves: when, what, from where. */
export async function recordReveal(deps: ManagementDeps, ctx: ManagementContext, action: AuditAction, target: AuditRecord['target']): Promise<void> {
  await deps.store.audit.append({ at: new Date(deps.clock()).toISOString(), action, target, peer: ctx.state.peer });
}
