import type { CredentialStore } from '../store/config-store.ts';
import type { CredentialView } from '../store/records.ts';
import { credentialStateAt } from './config-snapshot.ts';
import { credentialLocation } from './credential-location.ts';
import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../generated/index.ts';

/**
 * What an upstream call with a credential needs: its secret, and the upstream address its own
 * values name (`base_url` or `endpoint`, by its kind), or null to use the Group's base_url.
 */
export interface CredentialAccess {
  readonly secret: string;
  readonly baseUrl: string | null;
}

/** What an upstream answer or failure means for the credential that was used. */
export type CredentialVerdict = { action: 'disable'; reason: string } | { action: 'cooldown'; seconds: number } | { action: 'none' };

/**
 * Picks credentials of a Group by weight among the usable ones and applies upstream
 * verdicts (disable on 401/403, cooldown on 429/5xx/connection failure). Decrypted secrets are
 * cached per credential version, together with the credential's own upstream address, so the
 * hot path neither decrypts nor looks the address up on every request.
 */
export class CredentialPool {
  readonly #store: CredentialStore;
  /** Smooth weighted round-robin state: each credential's current weight. */
  readonly #current = new Map<number, number>();
  readonly #access = new Map<number, CredentialAccess & { version: string }>();

  constructor(store: CredentialStore) {
    this.#store = store;
  }

  /**
   * Usable credentials of a Group (active now, of a kind the channel takes) in the order to
   * try them: the first by smooth weighted round-robin, so traffic follows the weights and
   * equal weights take turns; the others after it as fallbacks.
   */
  usable(group: { id: number; channel: string }, credentials: readonly CredentialView[], now: number): CredentialView[] {
    const kinds: readonly string[] = CHANNELS[group.channel as ChannelId]?.credential_kinds ?? [];
    const all = credentials.filter((c) => credentialStateAt(c, now) === 'active' && isStaticKind(c.kind) && kinds.includes(c.kind));
    if (all.length < 2) return all;
    let total = 0;
    let best: CredentialView | undefined;
    for (const c of all) {
      const weight = Math.max(c.weight ?? 1, 1);
      const current = (this.#current.get(c.id) ?? 0) + weight;
      this.#current.set(c.id, current);
      total += weight;
      if (!best || current > this.#current.get(best.id)!) best = c;
    }
    this.#current.set(best!.id, this.#current.get(best!.id)! - total);
    return [best!, ...all.filter((c) => c !== best)];
  }

  /** The credential's access when it is cached for this version of the credential. */
  cachedAccess(view: CredentialView): CredentialAccess | undefined {
    const cached = this.#access.get(view.id);
    return cached !== undefined && cached.version === view.updated_at ? cached : undefined;
  }

  /** The secret and location come from one reading of the store, so they always belong together. */
  async accessOf(view: CredentialView): Promise<CredentialAccess | undefined> {
    const cached = this.cachedAccess(view);
    if (cached !== undefined) return cached;
    const values = await this.#store.reveal(view.group_id, view.id);
    const field = CREDENTIAL_KINDS[view.kind as CredentialKindId]?.fields.find((f) => f.secret && f.required);
    const secret = field && values?.[field.name];
    if (secret === undefined || values === undefined) return undefined;
    const access = { version: view.updated_at, secret, baseUrl: credentialLocation(view.kind, values) };
    this.#access.set(view.id, access);
    return access;
  }

  async apply(view: CredentialView, verdict: CredentialVerdict, now: number): Promise<void> {
    if (verdict.action === 'disable') await this.#store.setState(view.group_id, view.id, { to: 'disabled', reason: verdict.reason });
    if (verdict.action === 'cooldown') await this.#store.setState(view.group_id, view.id, { to: 'cooldown', until: new Date(now + verdict.seconds * 1000).toISOString() });
  }
}

/** Kinds that need an authorization flow are served by the adapters issue, not here. */
function isStaticKind(kind: string): boolean {
  return CREDENTIAL_KINDS[kind as CredentialKindId]?.flow === 'static';
}

/**
 * The longest cooldown a Retry-After can ask for: the most `credential_cooldown_seconds`
 * allows. A larger value (or a date years ahead) would shelve the credential without a reason.
 */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** The verdict for an upstream status (or null for a connection failure); `now` dates an HTTP-date Retry-After. */
export function verdictFor(status: number | null, retryAfter: string | undefined, defaultCooldownSeconds: number, now = Date.now()): CredentialVerdict {
  if (status === 401 || status === 403) return { action: 'disable', reason: `upstream answered ${status}` };
  // 501: the upstream does not implement the path; the credential is fine.
  if (status === null || status === 429 || (status >= 500 && status !== 501)) {
    const seconds = parseRetryAfter(retryAfter, now) ?? defaultCooldownSeconds;
    return { action: 'cooldown', seconds: Math.min(seconds, MAX_RETRY_AFTER_SECONDS) };
  }
  return { action: 'none' };
}

function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
