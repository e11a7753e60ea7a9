import { randomBytes } from 'node:crypto';
import { LogBatchEncoder } from './encode-log-batch.ts';
import type { LogRecord } from './log-record.ts';
import type { SealedLogBatch } from './write-log-batch.ts';
import { DropReporter } from './drop-reporter.ts';
import { DEFAULT_MAX_BUFFERED, DEFAULT_MAX_BUFFERED_BYTES, PendingLogBatches } from './pending-log-batches.ts';
import type { StoredObjectChange } from '../stored-object-store.ts';

export interface LogBatchAppenderOptions {
  /** Records per batch; a full batch is handed on at the next turn of the event loop. */
  batchSize?: number;
  /** Longest a record waits before its batch is handed on. Default 100 ms. */
  flushIntervalMs?: number;
  /** Records kept in sealed batches while handing them on fails; the oldest batches are dropped beyond it. Default 100 000. */
  maxBuffered?: number;
  /**
   * Bytes those batches may take (their encoding and their recorded bodies' text); beyond it the
   * oldest batches' bodies are dropped (marked `dropped`), then the oldest batches. Default 128 MiB.
   */
  maxBufferedBytes?: number;
  onError?: (error: unknown) => void;
}

/** The records of a batch that carries stored-object changes only (sealed at a close). */
const NO_RECORDS = { data: Buffer.alloc(0), count: 0, bodies: undefined, bytes: 0 };

/** A batch is also sealed once its records and their bodies' text take this much, whatever their number. */
const MAX_BATCH_BYTES = 1024 * 1024;

/**
 * Encodes appended records into the open batch and hands sealed batches to `handOn` (a write
 * or a post to the log writer): a full batch at the next turn, otherwise after
 * `flushIntervalMs`, one batch per turn so that a burst never holds the event loop. A batch
 * whose hand-on throws stays first in line and is tried again on the timer. Each sealed batch
 * gets a key unique to it (a random id of this appender and a counter), which makes storing
 * it a second time a no-op. Stored-object changes ride in the open batch too, sealed with the
 * records appended up to then; changes no record has followed yet wait for the next batch that
 * has records, since a batch of changes alone has no batch row: sent again after a later batch
 * was stored (a log writer's death), it would bring back older states. Only the flush at a
 * close seals them alone.
 */
export class LogBatchAppender {
  readonly #handOn: (batch: SealedLogBatch) => void;
  readonly #batchSize: number;
  readonly #flushIntervalMs: number;
  readonly #maxBuffered: number;
  readonly #maxBufferedBytes: number;
  readonly #onError: (error: unknown) => void;
  readonly #drops: DropReporter;
  readonly #encoder = new LogBatchEncoder();
  readonly #keyPrefix = randomBytes(12).toString('base64url');
  #sealed = 0;
  /** Batches queued so far, sealed here or enqueued: the queue's ids. */
  #queued = 0;
  /** Sealed batches not yet handed on, by their number. */
  readonly #queue = new PendingLogBatches();
  /** Stored-object changes of the open batch. */
  #objects: StoredObjectChange[] = [];
  #dropped = 0;
  #bodiesDropped = 0;
  #failing = false;
  /** Why handing on last failed: what a drop report names. */
  #lastFailure: unknown;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;

  constructor(handOn: (batch: SealedLogBatch) => void, options: LogBatchAppenderOptions = {}) {
    this.#handOn = handOn;
    this.#batchSize = options.batchSize ?? 1024;
    this.#flushIntervalMs = options.flushIntervalMs ?? 100;
    this.#maxBuffered = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.#onError = options.onError ?? (() => {});
    this.#drops = new DropReporter(this.#onError);
  }

  /** Records not yet handed on. */
  get size(): number {
    return this.#encoder.count + this.#queue.records;
  }

  /** Bytes of the records not yet handed on (sealed batches and the open one, bodies' text included). */
  get bufferedBytes(): number {
    return this.#encoder.bytes + this.#queue.bytes;
  }

  /** Records dropped because handing on kept failing while more than `maxBuffered` records, or `maxBufferedBytes`, waited. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Recorded bodies let go (marked `dropped`) to keep within `maxBufferedBytes`. */
  get bodiesDropped(): number {
    return this.#bodiesDropped;
  }

  append(record: LogRecord): void {
    this.#encoder.append(record);
    if (this.#encoder.count >= this.#batchSize || this.#encoder.bytes >= MAX_BATCH_BYTES) this.#seal();
    this.#schedule();
  }

  /** Waits in the open batch for a record: the request's own, appended after it. */
  appendStoredObject(change: StoredObjectChange): void {
    this.#objects.push(change);
  }

  /** A batch sealed elsewhere (the log writer's thread receives them so), handed on in turn. */
  enqueue(batch: SealedLogBatch): void {
    this.#push(batch);
    this.#schedule();
  }

  /**
   * Seals the open batch and hands on every batch now. Throws when a hand-on fails (the batches
   * are kept). Stored-object changes with no records keep waiting, unless `closing`: the last flush.
   */
  flushAll(closing = false): void {
    this.#cancelTimers();
    this.#seal(closing);
    try {
      while (this.#queue.size > 0) this.#handOnFirst();
      this.#failing = false;
    } catch (error) {
      this.#failing = true;
      this.#lastFailure = error;
      this.#schedule();
      throw error;
    }
  }

  #seal(closing = false): void {
    const records = this.#encoder.seal();
    if (records === undefined && !(closing && this.#objects.length > 0)) return;
    const objects = this.#objects.length === 0 ? undefined : this.#objects;
    this.#objects = [];
    this.#push({ key: `${this.#keyPrefix}.${++this.#sealed}`, ...(records ?? NO_RECORDS), objects });
  }

  #push(batch: SealedLogBatch): void {
    this.#queue.add(++this.#queued, batch);
    const drops = this.#queue.bound(this.#maxBuffered, this.#maxBufferedBytes);
    this.#dropped += drops.records;
    this.#bodiesDropped += drops.bodies;
    this.#drops.dropped(drops, this.#lastFailure);
  }

  #handOnFirst(): void {
    const [id, batch] = this.#queue.first()!;
    this.#handOn(batch);
    this.#queue.delete(id);
  }

  #schedule(): void {
    // Changes alone wait for a record, which schedules; a batch of changes alone (sealed at a
    // close) counts no records: the queue itself says whether any wait.
    if (this.#queue.size === 0 && this.#encoder.count === 0) return;
    // While handing on fails, only the timer retries, so a full queue does not spin.
    if (this.#queue.size > 0 && !this.#failing) {
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        this.#handOnOne();
      });
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        this.#seal();
        this.#handOnOne();
      }, this.#flushIntervalMs).unref();
    }
  }

  #handOnOne(): void {
    if (this.#queue.size > 0) {
      try {
        this.#handOnFirst();
        this.#failing = false;
      } catch (error) {
        this.#failing = true;
        this.#lastFailure = error;
        this.#onError(error);
      }
    }
    this.#schedule();
  }

  #cancelTimers(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }
}
