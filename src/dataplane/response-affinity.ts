import type { StoredObject, StoredObjectStore } from '../store/stored-object-store.ts';

/** The longest key (`response:` and an id) remembered; a longer one is routed as any call naming an object the gateway did not see created. */
const MAX_REMEMBERED_KEY_LENGTH = 512;

/** Where a response was created, by whom, and what its first read with usage still owes the log (StoredObject). */
export type RememberedResponse = Omit<StoredObject, 'key'>;

/**
 * Which Group and credential created a stored object (a response, a voice: an operation's
 * `resource` in the manifest), so that the calls naming it (retrieval, deletion, cancellation,
 * input items, a voice's update, speech in a voice) reach the upstream that holds it. Keyed by resourceKey.
 * Bounded: the oldest entries go first.
 * A response created in the background (`background: true`) is answered queued, before it has
 * used any tokens; its entry stays `unbilled` until a read of it by the AccessKey that created
 * it first reports its usage.
 * Every change is also recorded in `store` (with the log batch of the request that made it), and
 * `load` brings back what it kept, so that a restart forgets none of it; lookups stay in memory.
 */
export class ResponseAffinity {
  #entries = new Map<string, RememberedResponse>();

  constructor(
    readonly capacity: number,
    readonly store?: StoredObjectStore,
  ) {}

  /** Takes in the newest objects the store kept: older than any remembered since this affinity was made. */
  async load(): Promise<void> {
    if (this.store === undefined) return;
    const kept = await this.store.loadStoredObjects(this.capacity);
    const entries = new Map<string, RememberedResponse>();
    for (const { key, ...entry } of kept) entries.set(key, entry);
    for (const [key, entry] of this.#entries) {
      entries.delete(key);
      entries.set(key, entry);
    }
    for (const key of entries.keys()) {
      if (entries.size <= this.capacity) break;
      entries.delete(key);
    }
    this.#entries = entries;
  }

  /** `created` comes with the create; a later read of the response keeps what it set. */
  remember(responseId: string, groupId: number, credentialId: number, created?: { background: boolean; upstreamModel: string | null; externalModel: string | null; accessKeyId: number }): void {
    // The id comes from an upstream's answer (or a client's conversation): a megabyte of it, a
    // hundred thousand times over, would fill memory and the log file. Real ids are under 100 characters.
    if (responseId.length > MAX_REMEMBERED_KEY_LENGTH) return;
    const before = this.#entries.get(responseId);
    const entry: RememberedResponse = {
      groupId,
      credentialId,
      createdBy: created?.accessKeyId ?? before?.createdBy ?? null,
      unbilled: created?.background ?? before?.unbilled ?? false,
      upstreamModel: created?.upstreamModel ?? before?.upstreamModel ?? null,
      externalModel: created?.externalModel ?? before?.externalModel ?? null,
    };
    this.#entries.delete(responseId);
    this.#entries.set(responseId, entry);
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
    this.store?.recordStoredObject({ type: 'remembered', object: { key: responseId, ...entry } });
  }

  lookup(responseId: string): RememberedResponse | undefined {
    return this.#entries.get(responseId);
  }

  /** True once for a background response not yet billed, read by its creator: the caller then counts the usage it read. */
  claimUsage(responseId: string, accessKeyId: number): boolean {
    const entry = this.#entries.get(responseId);
    if (entry === undefined || !owesUsageTo(entry, accessKeyId)) return false;
    entry.unbilled = false;
    this.store?.recordStoredObject({ type: 'billed', key: responseId });
    return true;
  }
}

/** The key an object is remembered under: ids of different kinds may look alike. */
export function resourceKey(kind: string, id: string): string {
  return `${kind}:${id}`;
}

/** Whether a read by this AccessKey is to count the response's usage: it created it, and none was counted yet. */
export function owesUsageTo(entry: RememberedResponse, accessKeyId: number): boolean {
  return entry.unbilled && entry.createdBy === accessKeyId;
}
