import type {
  AccessKeyQuota,
  AccessKeyRecord,
  AuditRecord,
  CredentialRecord,
  CredentialStageRecord,
  CredentialStageState,
  CredentialView,
  GroupModel,
  GroupRecord,
  IdempotencyRecord,
  ModelPriceRecord,
  PriceSource,
  Settings,
} from './records.ts';
import type { ModelPrice } from '../usage/compute-cost.ts';
import type { NamedIds } from './logs/log-store.ts';

export { DuplicateCredentialError } from './duplicate-credential-error.ts';
export { UnknownGroupError } from './unknown-group-error.ts';

// Storage interfaces of the configuration. The embedded implementation is lowdb
// (src/store/lowdb); a shared database can implement the same interfaces later.

export interface NewGroup {
  name: string;
  description?: string;
  channel: string;
  base_url?: string | null;
  versionless_api?: boolean;
  proxy_url?: string | null;
  priority?: number;
  weight?: number;
  enabled?: boolean;
  models?: GroupModel[];
}

export type GroupPatch = Partial<Pick<GroupRecord, 'name' | 'description' | 'base_url' | 'versionless_api' | 'proxy_url' | 'priority' | 'weight' | 'enabled'>>;

export interface GroupStore {
  list(): Promise<GroupRecord[]>;
  get(id: number): Promise<GroupRecord | undefined>;
  create(input: NewGroup): Promise<GroupRecord>;
  update(id: number, patch: GroupPatch): Promise<GroupRecord | undefined>;
  setModels(id: number, models: GroupModel[]): Promise<GroupRecord | undefined>;
  /** Removes the Group, its credentials and stages, and its id from AccessKey visibility lists. */
  delete(id: number): Promise<boolean>;
  /** Groups (enabled or not) that map this external model name. */
  listExposingModel(external: string): Promise<GroupRecord[]>;
}

export interface NewCredential {
  kind: string;
  name?: string | null;
  /** All fields of the credential kind, secret and not; the store encrypts the secret ones. */
  values: Record<string, string>;
  secretFields: readonly string[];
  proxy_url?: string | null;
  weight?: number;
}

export type CredentialCreateOutcome = { created: CredentialView } | { duplicate_of: number };

export type CredentialStateChange =
  | { to: 'active' }
  | { to: 'disabled'; reason: string }
  /** A later cooldown already set stands (verdicts of concurrent requests); `{ to: 'active' }` ends one. */
  | { to: 'cooldown'; until: string };

export interface CredentialStateOptions {
  /** Change the state only while the credential is still at this revision; otherwise nothing is written. */
  expectedRevision?: number;
}

export interface CredentialPatch {
  name?: string | null;
  weight?: number;
  proxy_url?: string | null;
  /** Replaces the values of the kind's fields; secret ones are re-encrypted. */
  values?: Record<string, string>;
  secretFields?: readonly string[];
  /**
   * Fields that, absent from `values`, keep the credential's value: taken in the write itself,
   * so a concurrent update's value is kept rather than one read before it.
   */
  keepWhenOmitted?: readonly string[];
}

export interface CredentialStore {
  list(groupId: number): Promise<CredentialView[]>;
  /**
   * Every credential, by Group id (a Group without credentials is absent), read in one pass: for
   * the data plane's snapshot and the listings that count them per Group. The views may be the very objects an earlier call returned, for
   * credentials unchanged since: read them, never edit them.
   */
  listAll(): Promise<Map<number, CredentialView[]>>;
  get(groupId: number, id: number): Promise<CredentialView | undefined>;
  /**
   * Creates several in one write; a credential equal to an existing one of the Group is reported, not stored.
   * Rejects with UnknownGroupError, storing nothing, when the Group no longer exists.
   */
  createMany(groupId: number, items: NewCredential[]): Promise<CredentialCreateOutcome[]>;
  /** Rejects with DuplicateCredentialError, storing nothing, when the new values equal another credential of the Group. */
  update(groupId: number, id: number, patch: CredentialPatch): Promise<CredentialView | undefined>;
  /** Undefined when the credential is gone, or (nothing written) when it is no longer at `expectedRevision`. */
  setState(groupId: number, id: number, change: CredentialStateChange, options?: CredentialStateOptions): Promise<CredentialView | undefined>;
  consumeResetCredit(groupId: number, id: number): Promise<CredentialView | undefined>;
  delete(groupId: number, id: number): Promise<boolean>;
  /** Secret and public values of one credential. Callers audit this. */
  reveal(groupId: number, id: number): Promise<Record<string, string> | undefined>;
  /** As reveal, for every credential of a Group at once, by credential id. Callers audit this. */
  revealAll(groupId: number): Promise<Map<number, Record<string, string>>>;
  /** As reveal, with the revision those values belong to, read together; for the data plane, not audited. */
  unseal(groupId: number, id: number): Promise<{ values: Record<string, string>; revision: number } | undefined>;
}

export interface NewAccessKey {
  name: string;
  protocols: string[];
  groups?: number[] | null;
  models?: string[] | null;
  record_request_body?: boolean;
  quota?: AccessKeyQuota | null;
  expires_at?: string | null;
  enabled?: boolean;
}

export type AccessKeyPatch = Partial<Omit<NewAccessKey, never>>;

export interface AccessKeyWithValue {
  record: AccessKeyRecord;
  /** The plain value; returned only at creation and rotation. */
  value: string;
}

export interface AccessKeyStore {
  list(): Promise<AccessKeyRecord[]>;
  /** Every AccessKey's id, without copying the records (the data plane prunes by them after each change). */
  ids(): Promise<number[]>;
  get(id: number): Promise<AccessKeyRecord | undefined>;
  /** `create` and `update` reject with UnknownGroupError, storing nothing, when a listed Group no longer exists. */
  create(input: NewAccessKey): Promise<AccessKeyWithValue>;
  update(id: number, patch: AccessKeyPatch): Promise<AccessKeyRecord | undefined>;
  rotate(id: number): Promise<AccessKeyWithValue | undefined>;
  reveal(id: number): Promise<string | undefined>;
  delete(id: number): Promise<boolean>;
  /** By a keyed hash of the value: no timing oracle on the value, O(1) per request. */
  findByValue(value: string): Promise<AccessKeyRecord | undefined>;
}

export interface SettingsStore {
  get(): Promise<Settings>;
  /** Saves exactly the submitted items; for one item the last save wins. */
  save(items: Partial<Settings>): Promise<Settings>;
}

export interface ModelPriceStore {
  list(): Promise<ModelPriceRecord[]>;
  get(model: string): Promise<ModelPriceRecord | undefined>;
  put(model: string, price: ModelPrice, source: PriceSource): Promise<ModelPriceRecord>;
  /**
   * Upserts many in one write, except the models priced by hand (`source: manual`) as that
   * write finds them, which it keeps; a model named twice gets its last entry. Returns how many
   * models were new, changed and kept.
   */
  putMany(entries: ReadonlyArray<{ model: string; price: ModelPrice }>, source: Exclude<PriceSource, 'manual'>): Promise<{ added: number; updated: number; kept_manual: number }>;
  delete(model: string): Promise<boolean>;
}

export interface NewCredentialStage {
  group_id: number;
  kind: string;
  flow: string;
  expires_at: string;
  authorization: Record<string, string> | null;
}

export interface CredentialStagePatch {
  state?: CredentialStageState;
  expires_at?: string;
  authorization?: Record<string, string> | null;
  error?: string | null;
  credential_id?: number | null;
}

export interface CredentialStageStore {
  list(): Promise<CredentialStageRecord[]>;
  get(id: number): Promise<CredentialStageRecord | undefined>;
  /** Rejects with UnknownGroupError, storing nothing, when the Group no longer exists. */
  create(input: NewCredentialStage): Promise<CredentialStageRecord>;
  update(id: number, patch: CredentialStagePatch): Promise<CredentialStageRecord | undefined>;
  delete(id: number): Promise<boolean>;
}

export interface IdempotencyStore {
  get(key: string): Promise<IdempotencyRecord | undefined>;
  /** Durable before it resolves: a restart after this still replays. */
  put(record: IdempotencyRecord): Promise<void>;
  delete(key: string): Promise<void>;
  /** Drops results older than `resultTtlMs`, and records and configuration notes older than `recordTtlMs`. */
  prune(now: number, resultTtlMs: number, recordTtlMs: number): Promise<void>;
  /** Runs `operation` so that each configuration write it makes also notes `key`, in the same atomic write. */
  noteChanges<R>(key: string, operation: () => Promise<R>): Promise<R>;
  /** When a configuration write noted `key` (ms), or undefined when none is on disk. */
  changedAt(key: string): Promise<number | undefined>;
}

export interface AuditStore {
  append(entry: Omit<AuditRecord, 'id'>): Promise<AuditRecord>;
  list(limit: number): Promise<AuditRecord[]>;
}

export interface ConfigStore {
  readonly groups: GroupStore;
  readonly credentials: CredentialStore;
  readonly accessKeys: AccessKeyStore;
  readonly settings: SettingsStore;
  readonly modelPrices: ModelPriceStore;
  readonly credentialStages: CredentialStageStore;
  readonly idempotency: IdempotencyStore;
  readonly audit: AuditStore;
  /**
   * Changes whenever groups, credentials, access keys, settings or prices change; a credential's
   * cooldown verdict (one with an expected revision) only once written, with the others of its
   * window: until then cooldownVersion tells it.
   */
  generation(): number;
  /** Changes whenever a cooldown verdict is taken and not yet written, which generation() does not tell. */
  cooldownVersion(): number;
  /**
   * The views (as credentials.listAll reads them) of only the credentials with a cooldown verdict
   * taken after the cooldownVersion `version` and not yet written, by Group id then credential id;
   * read at once, for the data plane to swap into its arrays.
   */
  cooledSince(version: number): Map<number, Map<number, CredentialView>>;
  /** Whether the last write of one of its files failed (a full disk): reads come from memory and cannot tell. */
  writesFailing(): boolean;
  /** Keeps new Groups, credentials and AccessKeys from taking ids up to these (named by the request logs); writes only to raise one. */
  reserveIds(named: NamedIds): Promise<void>;
  /** Waits for every pending write; the store is unusable afterwards. */
  close(): Promise<void>;
}
