/**
 * What the gateway remembers of a stored object it saw created or read (a response, a
 * compaction, a voice: an operation's `resource` in the manifest), so that the calls naming it
 * reach the upstream that holds it, only its creator names it, and a background response is
 * billed once. Kept with the request logs, so that it outlives a restart.
 */
export interface StoredObject {
  /** The object's kind and id (resourceKey in src/dataplane/response-affinity.ts). */
  key: string;
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

export type StoredObjectChange =
  /** Remembered anew, or again by a read: it becomes the newest. */
  | { type: 'remembered'; object: StoredObject }
  /** Its usage was counted: no longer unbilled, its place among the newest kept. */
  | { type: 'billed'; key: string };

/** How many objects are remembered, in memory and in the store: the oldest go first. */
export const STORED_OBJECTS_KEPT = 100_000;

/**
 * Where the remembered objects are kept. `record` is synchronous and cheap, as a log append is:
 * a change is written with the first log batch sealed with records after it is made (the log
 * store's flush at a close excepted), so never after the record of the request that made it
 * (appended after it), and most often in its transaction.
 */
export interface StoredObjectStore {
  recordStoredObject(change: StoredObjectChange): void;
  /** The newest `limit` objects, oldest first. */
  loadStoredObjects(limit: number): Promise<StoredObject[]>;
}
