import type { Clock } from '../clock.ts';
import type { CredentialCreateOutcome, CredentialPatch, CredentialStateChange, CredentialStateOptions, CredentialStore, NewCredential } from '../config-store.ts';
import { DuplicateCredentialError } from '../duplicate-credential-error.ts';
import { maskSecret } from '../mask.ts';
import type { CredentialView } from '../records.ts';
import type { ConfigData, StoredCredential } from './config-document.ts';
import { revisionOf } from './credential-revision.ts';
import type { JsonDocument } from './json-document.ts';
import type { PendingCooldown, PendingCooldowns } from './pending-cooldowns.ts';
import { requireGroups } from './require-groups.ts';
import type { SecretBox } from './secret-box.ts';

export class LowdbCredentialStore implements CredentialStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #box: SecretBox;
  readonly #clock: Clock;
  /** Cooldown verdicts not yet in the document: every view shows them. */
  readonly #pending: PendingCooldowns;
  /** The views listAll last returned, by credential id, to hand out again while unchanged. */
  #listed = new Map<number, CredentialView>();

  constructor(doc: JsonDocument<ConfigData>, box: SecretBox, clock: Clock, pending: PendingCooldowns) {
    this.#doc = doc;
    this.#box = box;
    this.#clock = clock;
    this.#pending = pending;
  }

  async list(groupId: number): Promise<CredentialView[]> {
    const now = this.#clock();
    return this.#doc.data.credentials.filter((c) => c.group_id === groupId).map((c) => this.#view(c, now));
  }

  async listAll(): Promise<Map<number, CredentialView[]>> {
    const now = this.#clock();
    const byGroup = new Map<number, CredentialView[]>();
    const listed = new Map<number, CredentialView>();
    for (const c of this.#doc.data.credentials) {
      const view = this.#listedView(c, now);
      listed.set(c.id, view);
      const views = byGroup.get(c.group_id);
      if (views === undefined) byGroup.set(c.group_id, [view]);
      else views.push(view);
    }
    this.#listed = listed;
    return byGroup;
  }

  /**
   * The views of only the credentials with a cooldown noted after `version` (see
   * PendingCooldowns), by Group then id, read at once: the data plane's snapshot swaps them into
   * their Groups' arrays. Walking every credential for their Groups cost more than the rest of a
   * request with thousands of them.
   */
  cooledSince(version: number): Map<number, Map<number, CredentialView>> {
    const byGroup = new Map<number, Map<number, CredentialView>>();
    const noted = this.#pending.notedSince(version);
    if (noted.size === 0) return byGroup;
    const now = this.#clock();
    for (const [id, p] of noted) {
      // Gone or changed since: that was a write, after which the snapshot is rebuilt anyway.
      const c = this.#find(this.#doc.data.credentials, p.groupId, id);
      if (c === undefined) continue;
      // listAll hands it out again while it stays as it is now.
      const view = this.#listedView(c, now);
      this.#listed.set(id, view);
      const views = byGroup.get(p.groupId);
      if (views === undefined) byGroup.set(p.groupId, new Map([[id, view]]));
      else views.set(id, view);
    }
    return byGroup;
  }

  async get(groupId: number, id: number): Promise<CredentialView | undefined> {
    const c = this.#find(this.#doc.data.credentials, groupId, id);
    return c && this.#view(c, this.#clock());
  }

  createMany(groupId: number, items: NewCredential[]): Promise<CredentialCreateOutcome[]> {
    return this.#doc.mutate((d) => {
      requireGroups(d, [groupId]);
      const nowMs = this.#clock();
      const now = new Date(nowMs).toISOString();
      const byFingerprint = new Map(d.credentials.filter((c) => c.group_id === groupId).map((c) => [c.fingerprint, c.id]));
      return items.map((item): CredentialCreateOutcome => {
        const fingerprint = this.#fingerprint(item.kind, item.values);
        const existing = byFingerprint.get(fingerprint);
        if (existing !== undefined) return { duplicate_of: existing };
        const id = d.next_id.credential++;
        const split = splitValues(item.values, item.secretFields);
        const stored: StoredCredential = {
          id,
          group_id: groupId,
          kind: item.kind,
          name: item.name ?? null,
          fields: split.public,
          masked: mapValues(split.secret, maskSecret),
          enabled: true,
          disabled_reason: null,
          cooldown_until: null,
          reset_credits_consumed: 0,
          weight: item.weight ?? 1,
          proxy_url: item.proxy_url ?? null,
          created_at: now,
          updated_at: now,
          revision: 1,
          sealed: this.#box.encrypt(JSON.stringify(split.secret), sealContext(id)),
          fingerprint,
        };
        d.credentials.push(stored);
        byFingerprint.set(fingerprint, id);
        return { created: toView(stored, nowMs) };
      });
    });
  }

  update(groupId: number, id: number, patch: CredentialPatch): Promise<CredentialView | undefined> {
    return this.#edit(groupId, id, (c, d) => {
      if (patch.name !== undefined) c.name = patch.name;
      if (patch.weight !== undefined) c.weight = patch.weight;
      if (patch.proxy_url !== undefined && patch.proxy_url !== c.proxy_url) {
        c.proxy_url = patch.proxy_url;
        // A cooldown for failing to reach the upstream one way says nothing of another way.
        c.cooldown_until = null;
      }
      if (patch.values !== undefined) {
        const values = { ...this.#kept(c, patch.values, patch.keepWhenOmitted ?? []), ...patch.values };
        const fingerprint = this.#fingerprint(c.kind, values);
        // Checked in the write itself, so two concurrent updates cannot both pass.
        const twin = d.credentials.find((o) => o.group_id === groupId && o.id !== c.id && o.fingerprint === fingerprint);
        if (twin) throw new DuplicateCredentialError(twin.id);
        const split = splitValues(values, patch.secretFields ?? []);
        const secretChanged = fingerprint !== c.fingerprint && JSON.stringify(sortedEntries(split.secret)) !== JSON.stringify(sortedEntries(this.#secret(c)));
        c.fields = split.public;
        c.masked = mapValues(split.secret, maskSecret);
        c.sealed = this.#box.encrypt(JSON.stringify(split.secret), sealContext(c.id));
        if (fingerprint !== c.fingerprint) {
          // What the upstream said about the old secret, or at the old address, does not hold for the new one.
          c.cooldown_until = null;
          // A 401/403 is about the secret: a new address alone does not make a wrong key right.
          if (secretChanged && !c.enabled && disabledByUpstream(c)) enable(c);
        }
        c.fingerprint = fingerprint;
      }
    });
  }

  async setState(groupId: number, id: number, change: CredentialStateChange, options: CredentialStateOptions = {}): Promise<CredentialView | undefined> {
    const expected = options.expectedRevision;
    if (expected !== undefined && change.to === 'cooldown' && this.#pending.open) return this.#noteCooldown(groupId, id, change.until, expected);
    // Checked before queueing (most stale verdicts are seen here already) and again in the write
    // itself, as its precheck: a rotation or a hand enable may have landed in between. A verdict that changes
    // nothing writes nothing: under a failing upstream every attempt brings one, and each would
    // otherwise rewrite the whole file and wait for it.
    const check = (d: Readonly<ConfigData>) => {
      const c = this.#find(d.credentials, groupId, id);
      if (c === undefined || (expected !== undefined && revisionOf(c) !== expected)) throw STALE_REVISION;
      if (expected !== undefined && verdictChangesNothing(c, change, this.#clock())) throw NO_CHANGE;
    };
    // A verdict (made for a revision) leaves the revision as it is: verdicts on the same secret
    // all hold (a 401 after another request's 429 still disables); only a change of the
    // credential itself, a hand enable or disable included, outdates those still on their way.
    const apply = (c: StoredCredential) => {
      if (change.to === 'active') {
        enable(c);
        c.cooldown_until = null;
      } else if (change.to === 'disabled') {
        c.enabled = false;
        c.disabled_reason = change.reason;
        // Only verdicts come for a revision; the operator's disable does not.
        c.disabled_by = expected === undefined ? 'operator' : 'upstream';
      } else if (c.cooldown_until === null || Date.parse(change.until) > Date.parse(c.cooldown_until)) {
        // Of verdicts, the longest wait stands: a concurrent request's shorter one (a bare 503
        // after another's 429 with a Retry-After of an hour) must not cut it short.
        c.cooldown_until = change.until;
      }
    };
    try {
      check(this.#doc.data);
      // Verdicts throw (in check) before editing, so concurrent ones may share one write; the
      // operator's enable and disable keep a write of their own. The operator's enable raises the
      // revision, which outdates a pending cooldown: it needs no drop.
      if (expected === undefined) return await this.#edit(groupId, id, apply);
      let noted = 0;
      const enabling = change.to === 'active';
      let view: CredentialView | undefined;
      try {
        view = await this.#doc.mutateBatched((d) => {
          noted = this.#pending.version;
          if (enabling) this.#pending.ending(id, noted);
          return this.#applyTo(d, groupId, id, apply, false);
        }, check);
      } finally {
        if (enabling) this.#pending.ended(id);
      }
      if (!enabling || view === undefined) return view;
      // An enable verdict keeps the revision: it ends the pending cooldown, once written (a write
      // the disk refuses leaves the credential cooling, as its answer says), but not one another
      // answer set while the write was on its way.
      this.#pending.drop(id, noted);
      return this.get(groupId, id);
    } catch (err) {
      if (err === STALE_REVISION) return undefined;
      if (err === NO_CHANGE) return this.get(groupId, id);
      throw err;
    }
  }

  /**
   * A cooldown verdict, checked as the document's write would check it, is noted in memory and
   * written with the others of its window (PendingCooldowns): under a failing upstream every
   * attempt brings one, and each would otherwise rewrite the whole file and rebuild the data
   * plane's snapshot. Returns the view as it leaves the credential.
   */
  #noteCooldown(groupId: number, id: number, until: string, expected: number): CredentialView | undefined {
    const c = this.#find(this.#doc.data.credentials, groupId, id);
    if (c === undefined || revisionOf(c) !== expected) return undefined;
    const now = this.#clock();
    const seen = withPending(c, this.#pending.of(c));
    if (verdictChangesNothing(seen, { to: 'cooldown', until }, now)) return toView(seen, now);
    this.#pending.note(c, until, new Date(now).toISOString());
    return this.#view(c, now);
  }

  consumeResetCredit(groupId: number, id: number): Promise<CredentialView | undefined> {
    return this.#edit(groupId, id, (c) => {
      c.reset_credits_consumed += 1;
      c.cooldown_until = null;
    });
  }

  delete(groupId: number, id: number): Promise<boolean> {
    return this.#doc.mutate((d) => {
      const before = d.credentials.length;
      d.credentials = d.credentials.filter((c) => !(c.group_id === groupId && c.id === id));
      return d.credentials.length !== before;
    });
  }

  async reveal(groupId: number, id: number): Promise<Record<string, string> | undefined> {
    return (await this.unseal(groupId, id))?.values;
  }

  async revealAll(groupId: number): Promise<Map<number, Record<string, string>>> {
    return new Map(this.#doc.data.credentials.filter((c) => c.group_id === groupId).map((c) => [c.id, this.#values(c)]));
  }

  async unseal(groupId: number, id: number): Promise<{ values: Record<string, string>; revision: number } | undefined> {
    const c = this.#find(this.#doc.data.credentials, groupId, id);
    if (!c) return undefined;
    return { values: this.#values(c), revision: revisionOf(c) };
  }

  #values(c: StoredCredential): Record<string, string> {
    return { ...c.fields, ...this.#secret(c) };
  }

  #secret(c: StoredCredential): Record<string, string> {
    return JSON.parse(this.#box.decrypt(c.sealed, sealContext(c.id))) as Record<string, string>;
  }

  /** The stored values of the fields to keep that `values` leaves out. */
  #kept(c: StoredCredential, values: Readonly<Record<string, string>>, keepWhenOmitted: readonly string[]): Record<string, string> {
    const omitted = keepWhenOmitted.filter((name) => values[name] === undefined);
    if (omitted.length === 0) return {};
    const current = this.#values(c);
    return Object.fromEntries(omitted.flatMap((name) => (current[name] === undefined ? [] : [[name, current[name]]])));
  }

  #find(list: readonly StoredCredential[], groupId: number, id: number): StoredCredential | undefined {
    return list.find((c) => c.group_id === groupId && c.id === id);
  }

  #edit(groupId: number, id: number, change: (c: StoredCredential, d: ConfigData) => void, newRevision = true): Promise<CredentialView | undefined> {
    return this.#doc.mutate((d) => this.#applyTo(d, groupId, id, change, newRevision));
  }

  #applyTo(d: ConfigData, groupId: number, id: number, change: (c: StoredCredential, d: ConfigData) => void, newRevision: boolean): CredentialView | undefined {
    const c = this.#find(d.credentials, groupId, id);
    if (!c) return undefined;
    // A pending cooldown goes into this write first: the change ends it or keeps it (a rename, a
    // disable), as it would one already written; the new revision then outdates the entry.
    const pending = this.#pending.of(c);
    if (pending !== undefined) Object.assign(c, withPending(c, pending));
    change(c, d);
    const now = this.#clock();
    c.updated_at = new Date(now).toISOString();
    // Not the time: two writes in the same millisecond must still tell apart.
    if (newRevision) c.revision = revisionOf(c) + 1;
    return this.#view(c, now);
  }

  /** The view of `c` with its pending cooldown. */
  #view(c: StoredCredential, now: number): CredentialView {
    return toView(withPending(c, this.#pending.of(c)), now);
  }

  /** As #view, handing out the view listAll last made while the credential is unchanged since. */
  #listedView(c: StoredCredential, now: number): CredentialView {
    const seen = withPending(c, this.#pending.of(c));
    // Every write copies the whole document, so unchanged is told by content, not identity;
    // copying each view again is most of a snapshot's rebuild under a storm of changes.
    const earlier = this.#listed.get(c.id);
    return earlier !== undefined && unchangedSince(earlier, seen, now) ? earlier : toView(seen, now);
  }

  #fingerprint(kind: string, values: Record<string, string>): string {
    const canonical = JSON.stringify(Object.keys(values).sort().map((k) => [k, values[k]]));
    return this.#box.index('credential', `${kind}\0${canonical}`);
  }
}

/** Thrown inside a write to abandon it unwritten when the credential moved past the expected revision. */
const STALE_REVISION = Symbol('stale credential revision');

/** Thrown inside a write to abandon it unwritten when the verdict would change nothing. */
const NO_CHANGE = Symbol('credential verdict changes nothing');

/**
 * Less than this past the stored cooldown's end is no change: concurrent requests given the
 * same cooldown compute ends a few milliseconds apart, and each would otherwise rewrite the file.
 */
const COOLDOWN_MARGIN_MS = 1000;

/**
 * Whether a verdict leaves the credential as it is: already disabled (the first reason stands),
 * or a cooldown ending less than COOLDOWN_MARGIN_MS after the one stored, or now or earlier.
 */
function verdictChangesNothing(c: StoredCredential, change: CredentialStateChange, now: number): boolean {
  if (change.to === 'disabled') return !c.enabled;
  if (change.to !== 'cooldown') return false;
  const until = Date.parse(change.until);
  return until <= now || (c.cooldown_until !== null && until < Date.parse(c.cooldown_until) + COOLDOWN_MARGIN_MS);
}

/** The credential as its pending cooldown (one that stands: PendingCooldowns.of) leaves it. */
function withPending(c: StoredCredential, p: PendingCooldown | undefined): StoredCredential {
  if (p === undefined) return c;
  return { ...c, cooldown_until: p.until, updated_at: p.at > c.updated_at ? p.at : c.updated_at };
}

/** Rows stored before disabled_by existed tell a verdict's disable by the reason it wrote. */
function disabledByUpstream(c: StoredCredential): boolean {
  return c.disabled_by === undefined ? c.disabled_reason?.startsWith('upstream answered') === true : c.disabled_by === 'upstream';
}

function enable(c: StoredCredential): void {
  c.enabled = true;
  c.disabled_reason = null;
  delete c.disabled_by;
}

function sealContext(id: number): string {
  return `credential:${id}`;
}

/**
 * Whether a view still shows a stored credential as it is now. Any change of the credential
 * itself raises its revision (verdicts are dropped by it); a verdict leaves the revision and
 * changes only what is compared here besides. The state is compared too: a cooldown ends with time.
 */
function unchangedSince(view: CredentialView, c: StoredCredential, now: number): boolean {
  return (
    view.revision === revisionOf(c) &&
    view.updated_at === c.updated_at &&
    view.enabled === c.enabled &&
    view.disabled_reason === c.disabled_reason &&
    view.cooldown_until === c.cooldown_until &&
    view.state === stateOf(c, now)
  );
}

function stateOf(c: StoredCredential, now: number): CredentialView['state'] {
  return !c.enabled ? 'disabled' : c.cooldown_until !== null && Date.parse(c.cooldown_until) > now ? 'cooldown' : 'active';
}

function toView(c: StoredCredential, now: number): CredentialView {
  // Credentials stored before weights existed weigh 1.
  const { sealed: _sealed, fingerprint: _fingerprint, disabled_by: _disabledBy, ...record } = { ...c, weight: c.weight ?? 1, revision: revisionOf(c) };
  return { ...structuredClone(record), state: stateOf(c, now) };
}

function sortedEntries(values: Record<string, string>): [string, string][] {
  return Object.entries(values).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function splitValues(values: Record<string, string>, secretFields: readonly string[]): { public: Record<string, string>; secret: Record<string, string> } {
  const out = { public: {} as Record<string, string>, secret: {} as Record<string, string> };
  for (const [k, v] of Object.entries(values)) (secretFields.includes(k) ? out.secret : out.public)[k] = v;
  return out;
}

function mapValues(values: Record<string, string>, fn: (v: string) => string): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, fn(v)]));
}
