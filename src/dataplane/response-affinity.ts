/** Where a response was created, by whom, and what its first read with usage still owes the log. */
export interface RememberedResponse {
  groupId: number;
  credentialId: number;
  /** The AccessKey that created it, the only one that may name it; null for one learned from a read (open to any key). */
  createdBy: number | null;
  /** A background response whose usage no read by its creator has reported yet. */
  unbilled: boolean;
  /** The upstream model it was created with, to price what a read reports. */
  upstreamModel: string | null;
  /** The model the client named at its creation, under which a read's usage is reported. */
  externalModel: string | null;
}

/**
 * Which Group and credential created a stored object (a response, a voice: an operation's
 * `resource` in the manifest), so that the calls naming it (retrieval, deletion, cancellation,
 * input items, a voice's update, speech in a voice) reach the upstream that holds it. Keyed by resourceKey.
 * Bounded: the oldest entries go first.
 * A response created in the background (`background: true`) is answered queued, before it has
 * used any tokens; its entry stays `unbilled` until a read of it by the AccessKey that created
 * it first reports its usage.
 */
export class ResponseAffinity {
  readonly #entries = new Map<string, RememberedResponse>();

  constructor(readonly capacity: number) {}

  /** `created` comes with the create; a later read of the response keeps what it set. */
  remember(responseId: string, groupId: number, credentialId: number, created?: { background: boolean; upstreamModel: string | null; externalModel: string | null; accessKeyId: number }): void {
    const before = this.#entries.get(responseId);
    this.#entries.delete(responseId);
    this.#entries.set(responseId, {
      groupId,
      credentialId,
      createdBy: created?.accessKeyId ?? before?.createdBy ?? null,
      unbilled: created?.background ?? before?.unbilled ?? false,
      upstreamModel: created?.upstreamModel ?? before?.upstreamModel ?? null,
      externalModel: created?.externalModel ?? before?.externalModel ?? null,
    });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  lookup(responseId: string): RememberedResponse | undefined {
    return this.#entries.get(responseId);
  }

  /** True once for a background response not yet billed, read by its creator: the caller then counts the usage it read. */
  claimUsage(responseId: string, accessKeyId: number): boolean {
    const entry = this.#entries.get(responseId);
    if (entry === undefined || !owesUsageTo(entry, accessKeyId)) return false;
    entry.unbilled = false;
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
