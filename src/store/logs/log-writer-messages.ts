import type { LogFilter, LogPage, StatisticsQuery, UsageQuery } from './log-store.ts';
import type { SealedLogBatch } from './write-log-batch.ts';
import type { LogOpenFailure } from './log-open-failure.ts';

/** What the log-writer worker is started with (`workerData`). */
export interface LogWriterData {
  dataDir: string;
  /** The main thread's cap on unacknowledged records; the worker keeps no more than it while writes fail. */
  maxBuffered: number;
  /** The main thread's cap on the bytes of unacknowledged records, which the worker applies the same way. */
  maxBufferedBytes: number;
}

/** A LogStore read, or a prune, answered by the worker. A prune can be sent again like a read: it is idempotent. */
export type LogRead =
  | { method: 'get'; args: [requestId: string] }
  | { method: 'list'; args: [filter: LogFilter, page: LogPage] }
  | { method: 'usage'; args: [query: UsageQuery] }
  | { method: 'statistics'; args: [query: StatisticsQuery] }
  | { method: 'keyUsage'; args: [accessKeyId: number, from: number | undefined, to: number | undefined] }
  | { method: 'namedIds'; args: [] }
  | { method: 'prune'; args: [before: number] }
  | { method: 'loadStoredObjects'; args: [limit: number] };

/** A sealed batch as it arrives in the worker: structured clone turns its Buffer into a Uint8Array (a copy of its bytes). */
export type PostedLogBatch = Omit<SealedLogBatch, 'data'> & { data: Uint8Array };

/**
 * Main thread to worker. Batch ids increase by one per batch, and the worker handles messages
 * in order, so one `committed` id acknowledges every batch up to it.
 */
export type ToLogWriter =
  | { type: 'append'; batch: number; sealed: PostedLogBatch }
  | { type: 'read'; id: number; read: LogRead }
  | { type: 'close' };

/** Worker to main thread. Errors travel as Error objects (structured clone keeps type and message). */
export type FromLogWriter =
  /** The database is open. */
  | { type: 'ready' }
  /** The database could not be opened, or proved not writable; the worker then exits. */
  | ({ type: 'open-failed' } & LogOpenFailure)
  /** A line for the operator, such as a rebuild starting while the database opens. */
  | { type: 'notice'; message: string }
  /** Every batch up to and including `through` is committed. */
  | { type: 'committed'; through: number }
  /**
   * A commit failed; the worker keeps the records and retries on its own. `startedAt`: when the
   * commit began (wallClockMs), so that a flush asked for after it is not failed by it.
   */
  | { type: 'write-failed'; error: Error; startedAt: number }
  | { type: 'answer'; id: number; value: unknown }
  | { type: 'answer'; id: number; error: Error };
