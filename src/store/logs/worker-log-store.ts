import type { Worker } from 'node:worker_threads';
import type { LogRecord } from './log-record.ts';
import type { KeyUsage, LogFilter, LogPage, LogPageResult, LogStore, NamedIds, Statistics, StatisticsQuery, UsageQuery, UsageRow } from './log-store.ts';
import type { FromLogWriter, LogRead, ToLogWriter } from './log-writer-messages.ts';
import { LogBatchAppender } from './log-batch-appender.ts';
import { startLogWriter } from './start-log-writer.ts';
import type { SealedLogBatch } from './write-log-batch.ts';
import { wallClockMs } from './wall-clock-ms.ts';
import { FlushWaiters } from './flush-waiters.ts';
import { DropReporter } from './drop-reporter.ts';
import { InvalidLogCursorError } from './invalid-log-cursor.ts';
import { decodeCursor } from './log-cursor.ts';
import { logOpenError } from './log-open-failure.ts';
import { LogFileError } from './sqlite-log-reader.ts';
import { DEFAULT_MAX_BUFFERED, DEFAULT_MAX_BUFFERED_BYTES, PendingLogBatches } from './pending-log-batches.ts';
import type { StoredObject, StoredObjectChange, StoredObjectStore } from '../stored-object-store.ts';

export interface WorkerLogStoreOptions {
  /** Records per batch; a full batch is posted on the next turn. Default 1024: the worker stores each batch as one row, in one transaction. */
  batchSize?: number;
  /** Longest a record waits on the main thread before it is posted. Default 100 ms. */
  flushIntervalMs?: number;
  /** Unacknowledged records kept for re-sending (while writes fail or no worker is up); the oldest are dropped beyond it. Default 100 000. */
  maxBuffered?: number;
  /**
   * Bytes those records may take (their encoding and recorded bodies' text): beyond it the oldest
   * bodies are dropped (the records kept, their body marked `dropped`), then the oldest records. Default 128 MiB.
   */
  maxBufferedBytes?: number;
  /** Reports a failed write, a worker that died, or records dropped (rate-limited); the store recovers on its own from the first two. */
  onError?: (error: unknown) => void;
  /** Prints a line for the operator: a rebuild of the usage tables, once after an upgrade, before the store is ready. */
  onNotice?: (message: string) => void;
}

interface PendingRead {
  read: LogRead;
  /** Workers it was sent to; a read is retried once on a new worker, then rejected. */
  sends: number;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** Longest wait before starting a worker again after several died without doing any work. */
const MAX_RESTART_DELAY_MS = 5000;

/**
 * LogStore whose SQLite work runs in a worker thread (log-writer-worker.ts, which owns a
 * SqliteLogStore). `append` only encodes the record into the open batch (LogBatchAppender);
 * sealed batches are posted as one buffer each (copied by structured clone) and kept until the
 * worker acknowledges their commit, so a worker that dies loses nothing: a new one is started
 * and the unacknowledged batches are sent again (a batch that was in fact committed is ignored
 * there, by its key). Reads post the pending appends first, and the worker handles messages in order,
 * so they see every appended record. A read in flight when its worker dies is sent once more
 * to the next worker; if that one dies too, or a worker dies before it could open the
 * database, the read rejects.
 */
export class WorkerLogStore implements LogStore, StoredObjectStore {
  readonly storedObjects: StoredObjectStore = this;
  readonly #dataDir: string;
  readonly #onError: (error: unknown) => void;
  readonly #onNotice: (message: string) => void;
  readonly #maxBuffered: number;
  readonly #maxBufferedBytes: number;
  readonly #appender: LogBatchAppender;
  /** Posted batches not yet acknowledged, by batch id, in posting order. */
  readonly #unacked = new PendingLogBatches();
  readonly #reads = new Map<number, PendingRead>();
  readonly #flushWaiters = new FlushWaiters();
  readonly #drops: DropReporter;
  #worker: Worker | undefined;
  #ready = false;
  #lastBatch = 0;
  #lastRead = 0;
  #dropped = 0;
  #bodiesDropped = 0;
  /** The last write failure or worker death: why records wait, and why they are dropped. */
  #lastFailure: Error | undefined;
  #deathsWithoutProgress = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #workerError: Error | undefined;
  #closing: Promise<void> | undefined;
  /** Set once the worker was asked to close: from then on its exit is expected. */
  #stopping = false;
  /** While open() waits for the first worker: its death is open()'s to report, not onError's, and no new worker follows. */
  #opening = false;

  constructor(dataDir: string, options: WorkerLogStoreOptions = {}) {
    this.#dataDir = dataDir;
    this.#onError = options.onError ?? (() => {});
    this.#onNotice = options.onNotice ?? (() => {});
    this.#maxBuffered = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.#drops = new DropReporter(this.#onError);
    this.#appender = new LogBatchAppender((batch) => this.#post(batch), {
      ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
      ...(options.flushIntervalMs !== undefined ? { flushIntervalMs: options.flushIntervalMs } : {}),
      onError: this.#onError,
    });
    this.#start();
  }

  /**
   * Starts the store and waits until its first worker has opened the database; if it cannot,
   * closes the store and rejects, with a LogFileError naming the file when the database is what failed.
   */
  static async open(dataDir: string, options: WorkerLogStoreOptions = {}): Promise<WorkerLogStore> {
    const store = new WorkerLogStore(dataDir, options);
    store.#opening = true;
    const worker = store.#worker!;
    const [event] = await Promise.race([onceMessage(worker, 'ready'), onceExit(worker)]);
    store.#opening = false;
    if (event === 'message') return store;
    const error = store.#workerError instanceof LogFileError ? store.#workerError : store.#deathError('could not start');
    await store.close().catch(() => {});
    throw error;
  }

  /** Records appended but not yet committed by the worker. */
  get buffered(): number {
    return this.#appender.size + this.#unacked.records;
  }

  /** Bytes of those records, as `maxBufferedBytes` counts them. */
  get bufferedBytes(): number {
    return this.#appender.bufferedBytes + this.#unacked.bytes;
  }

  /** Records no longer kept for re-sending because more than `maxBuffered` records, or `maxBufferedBytes`, were unacknowledged. */
  get dropped(): number {
    return this.#dropped + this.#appender.dropped;
  }

  /** Recorded bodies no longer kept for re-sending (their records kept, the body marked `dropped`) because more than `maxBufferedBytes` were unacknowledged. */
  get bodiesDropped(): number {
    return this.#bodiesDropped + this.#appender.bodiesDropped;
  }

  append(record: LogRecord): void {
    if (this.#closing !== undefined) throw new Error('log store is closed');
    this.#appender.append(record);
  }

  /** Rides in the open batch, so it is kept and sent again as its records are until the worker commits it. */
  recordStoredObject(change: StoredObjectChange): void {
    if (this.#closing !== undefined) throw new Error('log store is closed');
    this.#appender.appendStoredObject(change);
  }

  loadStoredObjects(limit: number): Promise<StoredObject[]> {
    return this.#read({ method: 'loadStoredObjects', args: [limit] }) as Promise<StoredObject[]>;
  }

  flush(): Promise<void> {
    return this.#flush(false);
  }

  /** `closing`: also posts the stored-object changes no record has followed (LogBatchAppender.flushAll). */
  async #flush(closing: boolean): Promise<void> {
    this.#appender.flushAll(closing);
    const through = this.#lastBatch;
    if (!this.#isUnacked(through)) return;
    if (this.#stopping && this.#worker === undefined) throw new Error('log store is closed');
    await this.#flushWaiters.wait(through, wallClockMs());
  }

  get(requestId: string): Promise<LogRecord | undefined> {
    return this.#read({ method: 'get', args: [requestId] }) as Promise<LogRecord | undefined>;
  }

  list(filter: LogFilter, page: LogPage): Promise<LogPageResult> {
    // Checked on this side: an error thrown in the writer's thread arrives as a plain Error.
    if (page.cursor !== undefined && decodeCursor(page.cursor) === undefined) return Promise.reject(new InvalidLogCursorError());
    return this.#read({ method: 'list', args: [filter, page] }) as Promise<LogPageResult>;
  }

  usage(query: UsageQuery): Promise<UsageRow[]> {
    return this.#read({ method: 'usage', args: [query] }) as Promise<UsageRow[]>;
  }

  statistics(query: StatisticsQuery): Promise<Statistics> {
    return this.#read({ method: 'statistics', args: [query] }) as Promise<Statistics>;
  }

  /** Sent and answered like a read; the worker deletes in batches and commits appends in between. */
  keyUsage(accessKeyId: number, from?: number, to?: number): Promise<KeyUsage> {
    return this.#read({ method: 'keyUsage', args: [accessKeyId, from, to] }) as Promise<KeyUsage>;
  }

  namedIds(): Promise<NamedIds> {
    return this.#read({ method: 'namedIds', args: [] }) as Promise<NamedIds>;
  }

  prune(before: number): Promise<number> {
    return this.#read({ method: 'prune', args: [before] }) as Promise<number>;
  }

  /** Commits everything appended, closes the database and ends the worker. */
  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  /** For tests only: ends the worker abruptly, as a crash would. Resolves once it has exited. */
  async crashWorkerForTesting(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    // terminate() refs the worker until its exit, but a commit it sent just before, handled
    // meanwhile, unrefs it (#updateRef: nothing owed): the process could end before the exit.
    const hold = setInterval(() => {}, 60_000);
    try {
      await worker.terminate();
    } finally {
      clearInterval(hold);
    }
  }

  async #read(read: LogRead): Promise<unknown> {
    if (this.#closing !== undefined) throw new Error('log store is closed');
    // Pending appends go first, so the worker has them before it answers.
    this.#appender.flushAll();
    return await new Promise((resolve, reject) => {
      const id = ++this.#lastRead;
      this.#reads.set(id, { read, sends: 0, resolve, reject });
      this.#sendRead(id);
      this.#updateRef();
    });
  }

  #post(sealed: SealedLogBatch): void {
    const batch = this.#lastBatch + 1;
    // Posting first: should posting throw, the batch stays in the appender.
    this.#worker?.postMessage({ type: 'append', batch, sealed } satisfies ToLogWriter);
    this.#lastBatch = batch;
    this.#unacked.add(batch, sealed);
    this.#dropOldestBeyondLimit();
    this.#updateRef();
  }

  #sendRead(id: number): void {
    const pending = this.#reads.get(id);
    if (pending === undefined || this.#worker === undefined) return;
    pending.sends++;
    this.#worker.postMessage({ type: 'read', id, read: pending.read } satisfies ToLogWriter);
  }

  #start(): void {
    const worker = startLogWriter({ dataDir: this.#dataDir, maxBuffered: this.#maxBuffered, maxBufferedBytes: this.#maxBufferedBytes });
    this.#worker = worker;
    this.#ready = false;
    this.#workerError = undefined;
    worker.on('message', (message: FromLogWriter) => this.#onMessage(message));
    worker.on('error', (error) => {
      this.#workerError = error;
    });
    worker.on('exit', (code) => this.#onExit(worker, code));
    for (const [batch, sealed] of this.#unacked.entries()) worker.postMessage({ type: 'append', batch, sealed } satisfies ToLogWriter);
    for (const id of this.#reads.keys()) this.#sendRead(id);
    this.#updateRef();
  }

  #onMessage(message: FromLogWriter): void {
    switch (message.type) {
      case 'ready':
        this.#ready = true;
        this.#updateRef();
        return;
      case 'notice':
        this.#onNotice(message.message);
        return;
      case 'open-failed':
        // Its exit follows: the death is reported with this error.
        this.#workerError = logOpenError(this.#dataDir, message);
        return;
      case 'committed':
        this.#deathsWithoutProgress = 0;
        this.#acknowledge(message.through);
        return;
      case 'write-failed':
        this.#lastFailure = message.error;
        this.#onError(message.error);
        this.#rejectFlushes(message.error, message.startedAt);
        return;
      case 'answer': {
        this.#deathsWithoutProgress = 0;
        const pending = this.#reads.get(message.id);
        if (pending === undefined) return;
        this.#reads.delete(message.id);
        if ('error' in message) pending.reject(message.error);
        else pending.resolve(message.value);
        this.#updateRef();
        return;
      }
    }
  }

  #acknowledge(through: number): void {
    for (const [batch] of this.#unacked.entries()) {
      if (batch > through) break;
      this.#unacked.delete(batch);
    }
    this.#flushWaiters.settleAcknowledged((through) => this.#isUnacked(through));
    this.#updateRef();
  }

  /** Whether batch `through` or one before it still awaits its commit. */
  #isUnacked(through: number): boolean {
    const oldest = this.#unacked.first();
    return oldest !== undefined && oldest[0] <= through;
  }

  #onExit(worker: Worker, code: number): void {
    if (worker !== this.#worker) return;
    this.#worker = undefined;
    if (this.#stopping || this.#opening) return;
    const wasReady = this.#ready;
    this.#ready = false;
    const error = this.#deathError(`exited with code ${code}`);
    this.#lastFailure = error;
    this.#onError(error);
    this.#deathsWithoutProgress++;
    for (const [id, pending] of this.#reads) {
      if (wasReady && pending.sends < 2) continue;
      this.#reads.delete(id);
      pending.reject(error);
    }
    // A worker that could not open the database will likely fail again: waiting would hang.
    if (!wasReady) this.#rejectFlushes(error);
    const delay = this.#deathsWithoutProgress <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** this.#deathsWithoutProgress);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      this.#start();
    }, delay);
  }

  #deathError(what: string): Error {
    const cause = this.#workerError;
    return new Error(`log writer worker ${what}${cause === undefined ? '' : `: ${cause.message}`}`, cause === undefined ? {} : { cause });
  }

  /** Fails the flushes a failure concerns (FlushWaiters.reject). */
  #rejectFlushes(error: Error, startedAt?: number): void {
    this.#flushWaiters.reject(error, startedAt);
    this.#updateRef();
  }

  /** Bounds memory while the worker commits nothing (bodies first, then records); a healthy one keeps this to a few batches. */
  #dropOldestBeyondLimit(): void {
    const drops = this.#unacked.bound(this.#maxBuffered, this.#maxBufferedBytes);
    this.#dropped += drops.records;
    this.#bodiesDropped += drops.bodies;
    this.#drops.dropped(drops, this.#lastFailure?.message ?? 'writes are not acknowledged fast enough');
  }

  /** The worker keeps the process alive only while it starts, or owes an answer or a commit. */
  #updateRef(): void {
    const owing = !this.#ready || this.#reads.size > 0 || this.#flushWaiters.size > 0 || this.#unacked.size > 0 || this.#stopping;
    if (owing) this.#worker?.ref();
    else this.#worker?.unref();
  }

  async #shutDown(): Promise<void> {
    const failures: unknown[] = [];
    let flushFailure: unknown;
    try {
      await this.#flush(true);
    } catch (error) {
      flushFailure = error;
    }
    this.#stopping = true;
    if (this.#restartTimer !== undefined) clearTimeout(this.#restartTimer);
    const worker = this.#worker;
    if (worker !== undefined) {
      const exited = onceExit(worker);
      this.#updateRef();
      worker.postMessage({ type: 'close' } satisfies ToLogWriter);
      const [, code] = await exited;
      // The worker's close writes again what that flush failed to (waiting for a lock this time):
      // the failure lost records only if the close failed too.
      if (code !== 0) failures.push(...(flushFailure === undefined ? [] : [flushFailure]), this.#deathError(`exited with code ${code} while closing`));
    } else if (flushFailure !== undefined) {
      failures.push(flushFailure);
    }
    this.#worker = undefined;
    const closed = new Error('log store is closed');
    for (const pending of this.#reads.values()) pending.reject(closed);
    this.#reads.clear();
    this.#rejectFlushes(closed);
    if (failures.length > 0) throw this.#closeError(failures);
  }

  /** Names how many records the failed close could not write (and how many were dropped before), and why. */
  #closeError(failures: unknown[]): Error {
    const reasons = failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ');
    const dropped = this.dropped > 0 ? ` (and ${this.dropped} dropped earlier)` : '';
    return new Error(`${this.buffered} request records could not be written${dropped}: ${reasons}`, { cause: failures[0] });
  }
}

function onceMessage(worker: Worker, type: FromLogWriter['type']): Promise<['message']> {
  return new Promise((resolve) => {
    const listener = (message: FromLogWriter): void => {
      if (message.type !== type) return;
      worker.off('message', listener);
      resolve(['message']);
    };
    worker.on('message', listener);
  });
}

function onceExit(worker: Worker): Promise<['exit', number]> {
  return new Promise((resolve) => worker.once('exit', (code: number) => resolve(['exit', code])));
}

/** A WorkerLogStore on `<dataDir>/logs.sqlite`, once its worker has opened the database. */
export function openWorkerLogStore(dataDir: string, options: WorkerLogStoreOptions = {}): Promise<WorkerLogStore> {
  return WorkerLogStore.open(dataDir, options);
}
