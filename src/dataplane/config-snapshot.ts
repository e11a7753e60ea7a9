import type { ConfigStore } from '../store/config-store.ts';
import type { AccessKeyRecord, CredentialView, GroupRecord, ModelPriceRecord, Settings } from '../store/records.ts';

export interface Snapshot {
  settings: Settings;
  groups: GroupRecord[];
  groupsByModel: Map<string, GroupRecord[]>;
  /** A Group's array is replaced (never edited) in place when a cooldown among its credentials is taken. */
  credentialsByGroup: Map<number, CredentialView[]>;
  pricesByModel: Map<string, ModelPriceRecord>;
}

/** A credential and its Group, read together, and the settings as they were at that read (the global proxy). */
export interface ConfiguredCredential {
  credential: CredentialView;
  group: GroupRecord;
  settings: Settings;
}

const KEY_CACHE_LIMIT = 10_000;

/**
 * What the data plane reads on every request, derived once per configuration generation
 * instead of cloned from the store per request. Any write to the configuration changes the
 * generation and the next request rebuilds it. A cooldown verdict is not written at once (the
 * store writes those of a window together): the store's cooldownVersion tells it, and only the
 * arrays of the Groups it touched are swapped in, in the same snapshot object.
 */
export class ConfigSnapshot {
  readonly #store: ConfigStore;
  #generation = -1;
  /** The store's cooldownVersion the snapshot's credentials show. */
  #cooldownVersion = -1;
  #snapshot: Snapshot | undefined;
  #keys = new Map<string, AccessKeyRecord>();
  #rebuilding: { generation: number; snapshot: Promise<Snapshot> } | undefined;

  constructor(store: ConfigStore) {
    this.#store = store;
  }

  async current(): Promise<Snapshot> {
    const generation = this.#store.generation();
    if (this.#snapshot && generation === this.#generation) return this.#withCooldowns(this.#snapshot);
    // Requests that find one generation stale at once (a burst after a write) share its rebuild.
    let rebuilding = this.#rebuilding;
    if (rebuilding?.generation !== generation) {
      const snapshot = this.#rebuild(generation).finally(() => {
        if (this.#rebuilding?.snapshot === snapshot) this.#rebuilding = undefined;
      });
      rebuilding = this.#rebuilding = { generation, snapshot };
    }
    return await rebuilding.snapshot;
  }

  async #rebuild(generation: number): Promise<Snapshot> {
    // Read with the credentials (the store's reads take them synchronously): a cooldown after is swapped in later.
    const cooldownVersion = this.#store.cooldownVersion();
    // Every credential in one read: one per Group filtered them all each time (Groups × credentials).
    const [settings, groups, prices, credentials] = await Promise.all([this.#store.settings.get(), this.#store.groups.list(), this.#store.modelPrices.list(), this.#store.credentials.listAll()]);
    const groupsByModel = new Map<string, GroupRecord[]>();
    const credentialsByGroup = new Map<number, CredentialView[]>();
    for (const g of groups) {
      for (const m of g.models) {
        const same = groupsByModel.get(m.external);
        if (same === undefined) groupsByModel.set(m.external, [g]);
        else same.push(g);
      }
      credentialsByGroup.set(g.id, credentials.get(g.id) ?? []);
    }
    const pricesByModel = new Map(prices.map((p) => [p.model, p]));
    this.#snapshot = { settings, groups, groupsByModel, credentialsByGroup, pricesByModel };
    this.#generation = generation;
    this.#cooldownVersion = cooldownVersion;
    this.#keys = new Map();
    return this.#snapshot;
  }

  /** `snap` (the current one) with the cooldowns taken since it last looked. */
  #withCooldowns(snap: Snapshot): Snapshot {
    const version = this.#store.cooldownVersion();
    if (version === this.#cooldownVersion) return snap;
    // New arrays: the credential rotation's index is kept per array, and a request holding the old one reads on undisturbed.
    for (const [groupId, cooled] of this.#store.cooledSince(this.#cooldownVersion)) {
      const credentials = snap.credentialsByGroup.get(groupId);
      if (credentials !== undefined) snap.credentialsByGroup.set(groupId, credentials.map((c) => cooled.get(c.id) ?? c));
    }
    this.#cooldownVersion = version;
    return snap;
  }

  /** The snapshot when it is still current, without waiting: the common case on the hot path. */
  fresh(): Snapshot | undefined {
    return this.#snapshot !== undefined && this.#store.generation() === this.#generation ? this.#withCooldowns(this.#snapshot) : undefined;
  }

  /**
   * A credential of a Group, and that Group, as the configuration holds them now, for an attempt
   * that follows another's wait: undefined when either was deleted or disabled since, or the
   * credential is no longer active; its revision is the current one, so a rotated secret is read anew.
   * The settings come with them, so the attempt takes the global proxy as it is now too.
   */
  async credentialNow(groupId: number, credentialId: number, now: number): Promise<ConfiguredCredential | undefined> {
    const snap = this.fresh();
    // Stale after any write (a disable verdict, a window's cooldowns): the two records are read
    // alone rather than the whole snapshot rebuilt for them.
    const group = snap ? snap.groups.find((g) => g.id === groupId) : await this.#store.groups.get(groupId);
    if (group?.enabled !== true) return undefined;
    const credential = snap ? snap.credentialsByGroup.get(groupId)?.find((c) => c.id === credentialId) : await this.#store.credentials.get(groupId, credentialId);
    if (credential === undefined || credentialStateAt(credential, now) !== 'active') return undefined;
    return { credential, group, settings: snap ? snap.settings : await this.#store.settings.get() };
  }

  /** A valid AccessKey already seen in this generation, without waiting. */
  cachedAccessKey(presented: string): AccessKeyRecord | undefined {
    return this.fresh() === undefined ? undefined : this.#keys.get(presented);
  }

  /**
   * The AccessKey `presented` belongs to now, for a request or session admitted with `admitted`:
   * `admitted` itself, without waiting, while this generation holds that same record (one
   * lookup: the common case on the hot path); else read again (another record, or none).
   */
  currentAccessKey(presented: string, admitted: AccessKeyRecord): AccessKeyRecord | Promise<AccessKeyRecord | undefined> {
    return this.cachedAccessKey(presented) === admitted ? admitted : this.accessKey(presented);
  }

  /** The AccessKey a presented value belongs to; only valid keys are cached, per generation. */
  async accessKey(presented: string): Promise<AccessKeyRecord | undefined> {
    await this.current();
    const cached = this.#keys.get(presented);
    if (cached) return cached;
    const key = await this.#store.accessKeys.findByValue(presented);
    if (key && this.#generation === this.#store.generation()) {
      if (this.#keys.size >= KEY_CACHE_LIMIT) this.#keys.clear();
      this.#keys.set(presented, key);
    }
    return key;
  }
}

/** A credential's state now: its snapshot may be older than a cooldown's end. */
export function credentialStateAt(view: CredentialView, now: number): CredentialView['state'] {
  if (!view.enabled) return 'disabled';
  return view.cooldown_until !== null && Date.parse(view.cooldown_until) > now ? 'cooldown' : 'active';
}
