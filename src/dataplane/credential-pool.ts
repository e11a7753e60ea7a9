import type { CredentialStore } from '../store/config-store.ts';
import type { CredentialView, Settings } from '../store/records.ts';
import { firstHeaderValue, type HeaderMap } from '../upstream/index.ts';
import { credentialStateAt } from './config-snapshot.ts';
import { credentialLocation } from '../store/credential-location.ts';
import { NO_RETRY, retryAfterHeaders } from './retry-hints.ts';
import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../generated/index.ts';
import { ConfigStoreUnavailableError } from '../store/config-store-unavailable-error.ts';
import { httpDateMs } from './parse-http-date.ts';
import { rateLimitResetMs } from './rate-limit-reset-headers.ts';
import { forgetSecretForms } from './mask-upstream-secret.ts';
import { boundCredentials } from './bound-credential.ts';
import { buildServableIndex, CredentialTurn, ownerOf, type ServableIndex } from './credential-rotation.ts';

/**
 * What an upstream call with a credential needs: its secret, and the upstream address its own
 * values name (`base_url` or `endpoint`, by its kind), or null to use the Group's base_url.
 */
export interface CredentialAccess {
  readonly secret: string;
  readonly baseUrl: string | null;
  /** The credential's revision these values are of: an upstream's verdict on them holds only while it is current. */
  readonly revision: number;
}

/** What an upstream answer or failure means for the credential that was used. */
export type CredentialVerdict = { action: 'disable'; reason: string } | { action: 'cooldown'; ms: number } | { action: 'none' };

/**
 * Picks credentials of a Group by weight among the usable ones and applies upstream
 * verdicts (disable on 401/403, cooldown on 402/429/5xx/connection failure). Decrypted secrets are
 * cached per credential revision, together with the credential's own upstream address, so the
 * hot path neither decrypts nor looks the address up on every request. A verdict applies only
 * while the credential is at the revision whose secret was used: a 401 for a secret rotated
 * since, or a cooldown arriving after a hand enable, is dropped.
 */
export class CredentialPool {
  readonly #store: CredentialStore;
  /** Each Group's servable credentials, by the configuration's credentials array they were read from. */
  readonly #indexes = new WeakMap<readonly CredentialView[], ServableIndex>();
  /** The round-robin's position in each Group that has two or more servable credentials. */
  readonly #positions = new Map<number, number>();
  readonly #access = new Map<number, CredentialAccess>();
  /** The configuration `retain` last pruned for: the same one again costs one comparison. */
  #retainedFor: object | undefined;

  constructor(store: CredentialStore) {
    this.#store = store;
  }

  /**
   * Forgets what is kept for credentials a configuration snapshot no longer holds (deleted, or
   * their Group deleted), and secrets of revisions older than its: a deleted or rotated secret
   * does not stay decrypted in the gateway, and churn does not grow the pool. A credential
   * forgotten while still in use is read again from the store by its next request.
   */
  retain(snap: { readonly credentialsByGroup: ReadonlyMap<number, readonly CredentialView[]> }): void {
    if (snap === this.#retainedFor) return;
    this.#retainedFor = snap;
    const revisions = new Map<number, number>();
    for (const views of snap.credentialsByGroup.values()) for (const view of views) revisions.set(view.id, view.revision);
    for (const [id, access] of this.#access) {
      const revision = revisions.get(id);
      // A newer revision than the snapshot's was read from the store after it: still current.
      if (revision === undefined || access.revision < revision) {
        this.#access.delete(id);
        forgetSecretForms(access.secret);
      }
    }
    for (const id of this.#positions.keys()) if (!snap.credentialsByGroup.has(id)) this.#positions.delete(id);
  }

  /** The upstream addresses of the credentials whose access is kept: their requests may go there. */
  cachedLocations(): string[] {
    const locations: string[] = [];
    for (const access of this.#access.values()) if (access.baseUrl !== null) locations.push(access.baseUrl);
    return locations;
  }

  /** For diagnostics (tests of churn): how many secrets and Groups' round-robin positions are kept. */
  diagnosticSizes(): { secrets: number; rotations: number } {
    return { secrets: this.#access.size, rotations: this.#positions.size };
  }

  /**
   * Usable credentials of a Group (active now, of a kind the channel takes) in the order to
   * try them: the first by weighted round-robin, so traffic follows the weights and equal
   * weights take turns; the others after it as fallbacks, in configuration order wrapping round from it. Amortized O(1)
   * per request for equal weights, O(log n) for mixed ones: the Group is scanned only when its
   * configuration changes or a cooldown among its credentials ends (credential-rotation.ts).
   */
  usable(group: { id: number; channel: string }, credentials: readonly CredentialView[], now: number): CredentialTurn {
    const index = this.#indexOf(group, credentials, now);
    if (index.servable.length < 2) return index.whole;
    const { period, step } = index;
    let position = this.#positions.get(group.id) ?? 0;
    // The period changes when the servable credentials do; the position carries on in the new one.
    if (position >= period) position %= period;
    this.#positions.set(group.id, position + step < period ? position + step : position + step - period);
    return new CredentialTurn(index.servable, ownerOf(index, position));
  }

  /** The usable credentials of a Group, in the configuration's order, without taking a turn (route inspection). */
  servable(group: { id: number; channel: string }, credentials: readonly CredentialView[], now: number): readonly CredentialView[] {
    return this.#indexOf(group, credentials, now).servable;
  }

  #indexOf(group: { channel: string }, credentials: readonly CredentialView[], now: number): ServableIndex {
    const cached = this.#indexes.get(credentials);
    // The clock moved back past the build would make a cooldown count again: built anew too.
    if (cached !== undefined && cached.channel === group.channel && now < cached.validUntil && now >= cached.builtAt) return cached;
    const index = indexFor(group, credentials, now);
    this.#indexes.set(credentials, index);
    return index;
  }

  /**
   * Each of `judged` (a request's credentials as its verdicts left them) that this Group's
   * `credentials` hold, with the view it stands for there: the first of an id (a request judges a credential once: a stale-connection resend judges none).
   */
  #judgedIn(credentials: readonly CredentialView[], judged: readonly CredentialView[]): { was: CredentialView; now: CredentialView }[] {
    const found: { was: CredentialView; now: CredentialView }[] = [];
    if (judged.length === 0) return found;
    for (let i = 0; i < judged.length; i++) {
      const view = judged[i]!;
      const was = boundCredentials(credentials, view.id)[0];
      if (was !== undefined && judged.findIndex((j) => j.id === view.id) === i) found.push({ was, now: view });
    }
    return found;
  }

  /**
   * A refusal's retry hint when no credential of these Groups is usable: the wait until the first
   * one that cools down (of a kind its channel takes) is usable again, so that a client (the
   * openai and anthropic SDKs honour these) retries then. When none recovers by itself (all
   * disabled) or the first recovers later than CLIENT_RETRY_WAIT_LIMIT_MS, `x-should-retry: false`
   * tells the SDKs to raise at once; the wait, when known, is still given. `judged` (a request's
   * credentials as its verdicts left them) stand in for the same credentials in `credentialsOf`.
   * The Groups' indexes give the first recovery: the Groups are not read per refusal.
   */
  retryHeaders(groups: Iterable<{ id: number; channel: string }>, credentialsOf: (groupId: number) => readonly CredentialView[], now: number, judged: readonly CredentialView[] = []): Record<string, string> {
    let earliest = Infinity;
    for (const group of groups) {
      const at = this.#firstRecovery(group, credentialsOf(group.id), now, judged);
      if (at < earliest) earliest = at;
    }
    if (earliest === Infinity) return NO_RETRY;
    const hint = retryAfterHeaders(earliest - now);
    return earliest - now > CLIENT_RETRY_WAIT_LIMIT_MS ? { ...hint, ...NO_RETRY } : hint;
  }

  /** The earliest end of a cooldown among a Group's servable kinds, with `judged` standing in for theirs; Infinity for none. */
  #firstRecovery(group: { channel: string }, credentials: readonly CredentialView[], now: number, judged: readonly CredentialView[]): number {
    const index = this.#indexOf(group, credentials, now);
    const changed = this.#judgedIn(credentials, judged);
    if (changed.length === 0) return index.validUntil;
    const kinds = kindsOf(group);
    let judgedFirst = Infinity;
    for (const { now: view } of changed) if (isServable(view, 'cooldown', kinds, now)) judgedFirst = Math.min(judgedFirst, Date.parse(view.cooldown_until!));
    // The others' first recovery is the index's unless a judged credential held it (it may be the
    // only one to end then): then only a reading of the others knows the next (no request's own
    // pick is cooling in its snapshot, so this is no request's usual path).
    if (judgedFirst <= index.validUntil) return judgedFirst;
    if (!changed.some(({ was }) => isServable(was, 'cooldown', kinds, now) && Date.parse(was.cooldown_until!) === index.validUntil)) return index.validUntil;
    let earliest = judgedFirst;
    const replaced = new Set(changed.map(({ was }) => was));
    for (const c of credentials) if (!replaced.has(c) && isServable(c, 'cooldown', kinds, now)) earliest = Math.min(earliest, Date.parse(c.cooldown_until!));
    return earliest;
  }

  /**
   * Whether any credential of these Groups is usable now (as usable() finds them), with
   * `judged` standing in for the same credentials: the request's last answer carries
   * retryHeaders when none is. Read from the Groups' indexes.
   */
  anyUsable(groups: Iterable<{ id: number; channel: string }>, credentialsOf: (groupId: number) => readonly CredentialView[], now: number, judged: readonly CredentialView[] = []): boolean {
    for (const group of groups) {
      const credentials = credentialsOf(group.id);
      let usable = this.#indexOf(group, credentials, now).servable.length;
      const changed = this.#judgedIn(credentials, judged);
      if (changed.length > 0) {
        const kinds = kindsOf(group);
        for (const { was, now: view } of changed) usable += Number(isServable(view, 'active', kinds, now)) - Number(isServable(was, 'active', kinds, now));
      }
      if (usable > 0) return true;
    }
    return false;
  }

  /**
   * The detail of a no_available_credential (the data plane's refusal and route inspection's
   * `detail` alike), from the Groups' indexes: a Group with no credentials at all says so, and an
   * active credential of a kind that needs an authorization flow is not "disabled or cooling down".
   */
  noCredentialDetail(groups: Iterable<{ id: number; channel: string }>, credentialsOf: (groupId: number) => readonly CredentialView[], now: number): string {
    const all = [...groups];
    // By id: the candidates' order varies by weight from one request to the next.
    const empty = all.filter((g) => credentialsOf(g.id).length === 0).map((g) => g.id).sort((x, y) => x - y);
    const rest = all.filter((g) => credentialsOf(g.id).length > 0);
    const none = noCredentialsSentence(empty);
    if (rest.length === 0 && none !== '') return none;
    const others = none === '' ? 'the candidate groups' : 'the other candidate groups';
    const why = unusableBecause(rest.map((g) => this.#indexOf(g, credentialsOf(g.id), now)), now);
    const flow = 'an authorization flow (OAuth, service account and the like), which this version does not serve';
    const sentence = !why.needFlow
      ? `Every credential of ${others} is disabled or cooling down.`
      : why.notActive
        ? `Every credential of ${others} is disabled, cooling down, or of a kind that needs ${flow}.`
        : `The credentials of ${others} need ${flow}.`;
    return none === '' ? sentence : `${none} ${sentence}`;
  }

  /** The credential's access when it is cached for this revision of the credential. */
  cachedAccess(view: CredentialView): CredentialAccess | undefined {
    const cached = this.#access.get(view.id);
    return cached !== undefined && cached.revision === view.revision ? cached : undefined;
  }

  /**
   * The secret, location and revision come from one reading of the store, so they always belong
   * together (the revision may be newer than the view's, when the credential changed since).
   */
  async accessOf(view: CredentialView): Promise<CredentialAccess | undefined> {
    const cached = this.cachedAccess(view);
    if (cached !== undefined) return cached;
    const unsealed = await this.#store.unseal(view.group_id, view.id);
    const field = CREDENTIAL_KINDS[view.kind as CredentialKindId]?.fields.find((f) => f.secret && f.required);
    const secret = field && unsealed?.values[field.name];
    if (secret === undefined || unsealed === undefined) return undefined;
    const access = { revision: unsealed.revision, secret, baseUrl: credentialLocation(view.kind, unsealed.values) };
    this.#access.set(view.id, access);
    return access;
  }

  /**
   * The verdict on an attempt made with `used`; dropped (in the store's write) when the credential
   * has changed since. Returns the view as the verdict leaves it: the request's snapshot is not
   * rebuilt for its own verdicts, and its last answer's retry hint counts them.
   */
  async apply(view: CredentialView, used: CredentialAccess, verdict: CredentialVerdict, now: number): Promise<CredentialView> {
    if (verdict.action === 'none') return view;
    const options = { expectedRevision: used.revision };
    const change = verdict.action === 'disable' ? ({ to: 'disabled', reason: verdict.reason } as const) : ({ to: 'cooldown', until: new Date(now + verdict.ms).toISOString() } as const);
    try {
      // The store's view: a longer cooldown already set stands; a verdict dropped as stale (the credential changed) leaves it as it was.
      return (await this.#store.setState(view.group_id, view.id, change, options)) ?? view;
    } catch (error) {
      // A disk that refuses the write (health says so) must not fail the request too: it goes on
      // to the next credential, and this one is judged again by its next answer.
      if (!(error instanceof ConfigStoreUnavailableError)) throw error;
      return change.to === 'disabled' ? { ...view, enabled: false, state: 'disabled' } : { ...view, cooldown_until: change.until, state: 'cooldown' };
    }
  }
}

function kindsOf(group: { channel: string }): readonly string[] {
  return CHANNELS[group.channel as ChannelId]?.credential_kinds ?? [];
}

/**
 * Whether a credential is in `state` now and of a kind its Group's channel takes (`kinds`) and
 * this version serves: 'active' is usable now, 'cooldown' usable once its cooldown ends.
 */
function isServable(c: CredentialView, state: 'active' | 'cooldown', kinds: readonly string[], now: number): boolean {
  return credentialStateAt(c, now) === state && isStaticKind(c.kind) && kinds.includes(c.kind);
}


/** Names the Groups that hold no credential, and how to give them one; '' for none. */
function noCredentialsSentence(groupIds: readonly number[]): string {
  if (groupIds.length === 0) return '';
  if (groupIds.length === 1) return `Group ${groupIds[0]} has no credentials: import one (POST /api/groups/${groupIds[0]}/credentials/import).`;
  return `Groups ${groupIds.join(', ')} have no credentials: import one (POST /api/groups/{group_id}/credentials/import).`;
}

/**
 * Why none of the Groups' credentials was usable: some are active but of a kind that needs an
 * authorization flow (not served in this version), and some are disabled or cooling down.
 */
function unusableBecause(indexes: readonly ServableIndex[], now: number): { needFlow: boolean; notActive: boolean } {
  let needFlow = false;
  let notActive = false;
  for (const index of indexes) {
    if (index.flowActiveFrom <= now) needFlow = true;
    if (index.anyDisabled || index.coolingUntil > now) notActive = true;
  }
  return { needFlow, notActive };
}

/** A Group's index, built anew: one pass over its credentials. */
function indexFor(group: { channel: string }, credentials: readonly CredentialView[], now: number): ServableIndex {
  const kinds = kindsOf(group);
  return buildServableIndex(credentials, group.channel, (kind) => isStaticKind(kind) && kinds.includes(kind), (kind) => !isStaticKind(kind), now);
}

/** Kinds that need an authorization flow are served by the adapters issue, not here. */
function isStaticKind(kind: string): boolean {
  return CREDENTIAL_KINDS[kind as CredentialKindId]?.flow === 'static';
}

/**
 * The longest wait for a credential's recovery that a `no_available_credential` refusal leaves to
 * the client's retry. The openai and anthropic SDKs sleep as long as Retry-After says, with no
 * upper bound, before each retry (their own backoff is 0.5-8 s): a recovery within half a minute
 * is worth that wait; a longer one (the default 60 s cooldown, an upstream's daily limit) would
 * hold the caller a minute or a day before it fails.
 */
const CLIENT_RETRY_WAIT_LIMIT_MS = 30_000;

/**
 * The longest cooldown a Retry-After can ask for: the most `credential_cooldown_seconds`
 * allows. A larger value (or a date years ahead) would shelve the credential without a reason.
 */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** The settings a cooldown without the upstream's own hint is taken from. */
export type VerdictCooldowns = Pick<Settings, 'credential_cooldown_seconds' | 'server_error_cooldown_seconds'>;

/**
 * The verdict for an upstream status (or null for a connection failure). 401/403 disable, the
 * reason naming the body's error code when it gave one (`bodyCode`, token-like: never its
 * message). The cooldown is the upstream's own hint when it gives one: `retry-after-ms`
 * (OpenAI-style upstreams; preferred, it is the finer), else `retry-after` (seconds or an HTTP
 * date, dated from `now`), else `bodyDelayMs` (the body's own hint: Google's RetryInfo), else,
 * for a 429, when its exhausted limit resets (rate-limit-reset-headers.ts). Without one, a 5xx
 * or a failed connection is the upstream's own health, which is back in seconds (an overload):
 * `server_error_cooldown_seconds`; a 402 (out of credit) or 429 is the key's:
 * `credential_cooldown_seconds`.
 */
export function verdictFor(status: number | null, headers: HeaderMap | undefined, cooldowns: VerdictCooldowns, now = Date.now(), bodyDelayMs?: number, bodyCode?: string): CredentialVerdict {
  if (status === 401 || status === 403) return { action: 'disable', reason: bodyCode === undefined ? `upstream answered ${status}` : `upstream answered ${status} ${bodyCode}` };
  const keys = status === 402 || status === 429;
  // 501: the upstream does not implement the path; the credential is fine.
  if (keys || status === null || (status >= 500 && status !== 501)) {
    const fallbackSeconds = keys ? cooldowns.credential_cooldown_seconds : cooldowns.server_error_cooldown_seconds;
    const resetMs = status === 429 && headers !== undefined ? rateLimitResetMs(headers, now) : undefined;
    const ms = retryAfterMs(headers, now) ?? bodyDelayMs ?? resetMs ?? fallbackSeconds * 1000;
    return { action: 'cooldown', ms: Math.min(ms, MAX_RETRY_AFTER_SECONDS * 1000) };
  }
  return { action: 'none' };
}

function retryAfterMs(headers: HeaderMap | undefined, now: number): number | undefined {
  if (headers === undefined) return undefined;
  // A value that is not a plain number (blank, '0x10', '-5') is no hint: `retry-after` still may be.
  const ms = firstHeaderValue(headers['retry-after-ms'])?.trim();
  if (ms !== undefined && DELAY_NUMBER.test(ms)) return Math.ceil(Number(ms));
  const value = firstHeaderValue(headers['retry-after'])?.trim();
  if (!value) return undefined;
  if (DELAY_NUMBER.test(value)) return Math.ceil(Number(value)) * 1000;
  const at = httpDateMs(value, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

/** delay-seconds (RFC 9110 §10.2.3), and retry-after-ms, with a fraction as some upstreams send. */
const DELAY_NUMBER = /^\d+(?:\.\d+)?$/;
