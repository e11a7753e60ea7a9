import { ApiError, notFound, validationFailed } from '../../http/api-error.ts';
import type { CredentialStageCreateBody } from '../../generated/management/credential-stage-create.ts';
import type { CredentialStageImportBody } from '../../generated/management/credential-stage-import.ts';
import type { CredentialStageRecord, GroupRecord } from '../../store/records.ts';
import { completeCredentialValues, kindOfChannel, secretFieldsOf } from '../channel-rules.ts';
import type { ManagementContext, ManagementDeps } from '../context.ts';
import { whenGroupGone } from '../when-group-gone.ts';
import { idParam } from '../params.ts';
import { requireGroup } from '../require-group.ts';
import { route, type RouteDef } from '../route-def.ts';
import createSchema from '../schemas/credential-stage-create.json' with { type: 'json' };
import importSchema from '../schemas/credential-stage-import.json' with { type: 'json' };

const INTERACTIVE_FLOWS = ['oauth', 'device'];
const DEFAULT_STAGE_TTL_SECONDS = 15 * 60;
const OPEN_STATES: ReadonlyArray<CredentialStageRecord['state']> = ['awaiting_authorization', 'authorized'];

/**
 * Stages of subscription-credential authorization. States: awaiting_authorization ->
 * authorized -> imported, or failed / expired / cancelled. The authorization itself comes
 * from a flow provider (the adapters); without one a stage is completed by a manual import.
 */
export function credentialStageRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;
  const stageId = (ctx: ManagementContext) => idParam(ctx, 'stage_id', 'credential_stage');

  /** An open stage past its expiry is expired from then on. */
  async function current(id: number): Promise<CredentialStageRecord> {
    const stage = await store.credentialStages.get(id);
    if (!stage) throw notFound('credential_stage', id);
    if (OPEN_STATES.includes(stage.state) && Date.parse(stage.expires_at) <= deps.clock()) {
      return (await store.credentialStages.update(id, { state: 'expired' })) ?? stage;
    }
    return stage;
  }

  async function groupOf(stage: CredentialStageRecord): Promise<GroupRecord> {
    const g = await store.groups.get(stage.group_id);
    if (!g) throw groupDeleted();
    return g;
  }

  function requireOpen(stage: CredentialStageRecord): void {
    if (!OPEN_STATES.includes(stage.state)) throw new ApiError('CONFLICT', { data: { reason: 'stage_not_open', state: stage.state } });
  }

  async function complete(stage: CredentialStageRecord, values: Record<string, string>, name: string | null): Promise<CredentialStageRecord> {
    const group = await groupOf(stage);
    const kind = kindOfChannel(group.channel, stage.kind);
    const complete = completeCredentialValues(kind, values, group);
    const [outcome] = await whenGroupGone(store.credentials.createMany(group.id, [{ kind: kind.id, name, values: complete, secretFields: secretFieldsOf(kind) }]), groupDeleted);
    const credentialId = outcome && ('created' in outcome ? outcome.created.id : outcome.duplicate_of);
    return (await store.credentialStages.update(stage.id, { state: 'imported', credential_id: credentialId ?? null })) ?? stage;
  }

  return [
    route({
      method: 'GET',
      path: '/credential-stages',
      async handle() {
        return { data: await Promise.all((await store.credentialStages.list()).map((s) => current(s.id))) };
      },
    }),
    route<CredentialStageCreateBody>({
      method: 'POST',
      path: '/credential-stages',
      body: createSchema,
      async handle(_ctx, body) {
        const group = await requireGroup(store.groups, body.group_id);
        const kind = kindOfChannel(group.channel, body.kind);
        if (!INTERACTIVE_FLOWS.includes(kind.flow)) throw validationFailed('kind', 'not_an_authorization_flow', { flow: kind.flow, hint: 'use credentials/connect' });
        const expiresIn = (seconds: number) => new Date(deps.clock() + seconds * 1000).toISOString();
        let stage = await whenGroupGone(
          store.credentialStages.create({
            group_id: group.id,
            kind: kind.id,
            flow: kind.flow,
            authorization: null,
            expires_at: expiresIn(DEFAULT_STAGE_TTL_SECONDS),
          }),
          (id) => notFound('group', id),
        );
        if (deps.credentialFlows) {
          try {
            const started = await deps.credentialFlows.start({ channel: group.channel, kind: kind.id, stage_id: stage.id });
            const patch = { authorization: started.authorization, expires_at: expiresIn(started.expires_in_seconds ?? DEFAULT_STAGE_TTL_SECONDS) };
            stage = (await store.credentialStages.update(stage.id, patch)) ?? stage;
          } catch (err) {
            await store.credentialStages.update(stage.id, { state: 'failed', error: 'flow_start_failed' });
            throw new ApiError('BAD_GATEWAY', { data: { reason: 'flow_start_failed', stage_id: stage.id }, cause: err });
          }
        }
        return { status: 201, data: stage };
      },
    }),
    route({
      method: 'GET',
      path: '/credential-stages/:stage_id',
      async handle(ctx) {
        return { data: await current(stageId(ctx)) };
      },
    }),
    route({
      method: 'POST',
      path: '/credential-stages/:stage_id/poll',
      async handle(ctx) {
        const stage = await current(stageId(ctx));
        if (!OPEN_STATES.includes(stage.state) || !deps.credentialFlows) return { data: stage };
        let polled;
        try {
          polled = await deps.credentialFlows.poll(stage);
        } catch (err) {
          throw new ApiError('BAD_GATEWAY', { data: { reason: 'flow_poll_failed' }, cause: err });
        }
        if (polled.state === 'pending') return { data: stage };
        if (polled.state === 'failed') return { data: (await store.credentialStages.update(stage.id, { state: 'failed', error: polled.error })) ?? stage };
        await store.credentialStages.update(stage.id, { state: 'authorized' });
        return { data: await complete(stage, polled.values, null) };
      },
    }),
    route<CredentialStageImportBody>({
      method: 'POST',
      path: '/credential-stages/:stage_id/import',
      body: importSchema,
      async handle(ctx, body) {
        const stage = await current(stageId(ctx));
        requireOpen(stage);
        const values = Object.fromEntries(Object.entries(body.fields).filter((e): e is [string, string] => e[1] !== undefined));
        return { data: await complete(stage, values, body.name ?? null) };
      },
    }),
    route({
      method: 'POST',
      path: '/credential-stages/:stage_id/cancel',
      async handle(ctx) {
        const stage = await current(stageId(ctx));
        requireOpen(stage);
        return { data: (await store.credentialStages.update(stage.id, { state: 'cancelled' })) ?? stage };
      },
    }),
    route({
      method: 'DELETE',
      path: '/credential-stages/:stage_id',
      async handle(ctx) {
        if (!(await store.credentialStages.delete(stageId(ctx)))) throw notFound('credential_stage', stageId(ctx));
        return {};
      },
    }),
  ];
}

/** A stage whose Group is gone cannot be completed into it. */
function groupDeleted(): ApiError {
  return new ApiError('CONFLICT', { data: { reason: 'group_deleted' } });
}
