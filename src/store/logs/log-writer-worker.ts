import { types } from 'node:util';
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteLogStore } from './sqlite-log-store.ts';
import { logOpenFailure } from './log-open-failure.ts';
import { wallClockMs } from './wall-clock-ms.ts';
import type { FromLogWriter, LogRead, LogWriterData, ToLogWriter } from './log-writer-messages.ts';

/**
 * Worker side of WorkerLogStore: owns the SqliteLogStore, commits each posted batch and
 * acknowledges it, answers reads. Started by start-log-writer.ts.
 */
const port = parentPort;
if (port === null) throw new Error('log-writer-worker.ts runs as a worker thread');

/** After a failed commit, the worker tries again this often until one succeeds. */
const RETRY_MS = 1000;
/** How long a close waits out another program's write lock, and how often it tries again meanwhile. */
const CLOSE_LOCK_WAIT_MS = 5000;
const CLOSE_RETRY_MS = 50;

const data = workerData as LogWriterData;
const store = openStore();
/** Highest batch appended to the store but not yet acknowledged. */
let uncommittedThrough: number | undefined;
let commitScheduled = false;
let retryTimer: NodeJS.Timeout | undefined;
/** A close began: its own retries (waitOutWriteLock) take over from the timer's. */
let closing = false;

function send(message: FromLogWriter): void {
  port!.postMessage(message);
}

/** The worker's store; one that cannot be opened is posted as `open-failed` (the main thread names the file) and ends the worker. */
function openStore(): SqliteLogStore {
  try {
    // The same caps as the main thread's: a record (or body) the worker drops is one the main thread dropped too.
    return new SqliteLogStore(data.dataDir, { maxBuffered: data.maxBuffered, maxBufferedBytes: data.maxBufferedBytes, onNotice: (message) => send({ type: 'notice', message }) });
  } catch (error) {
    send({ type: 'open-failed', ...logOpenFailure(error, data.dataDir) });
    process.exit(1);
  }
}

/**
 * An error as it can cross to the main thread. Structured clone keeps only native errors;
 * better-sqlite3's SqliteError is not one and would arrive as a bare `{ code }`, without
 * message, so it is sent as an Error carrying its code and message.
 */
function transferableError(error: unknown): Error {
  if (types.isNativeError(error)) return error;
  if (!(error instanceof Error)) return new Error(String(error));
  const code = (error as { code?: unknown }).code;
  return new Error(typeof code === 'string' ? `${code}: ${error.message}` : error.message);
}

/** Writes everything appended so far in one go and acknowledges it; on failure reports and retries later. */
async function commit(): Promise<void> {
  const through = uncommittedThrough;
  if (through === undefined) return;
  const startedAt = wallClockMs();
  try {
    await store.flush();
  } catch (error) {
    send({ type: 'write-failed', error: transferableError(error), startedAt });
    // A timer set while closing would keep the closed worker alive until it fired.
    if (closing) return;
    retryTimer ??= setTimeout(() => {
      retryTimer = undefined;
      void commit();
    }, RETRY_MS);
    return;
  }
  // Batches that arrived while flush() settled were written too, but only their own commit acknowledges them.
  if (uncommittedThrough === through) {
    uncommittedThrough = undefined;
    // A read's commit can succeed before the retry: appends need not wait for it any more.
    if (retryTimer !== undefined) clearTimeout(retryTimer);
    retryTimer = undefined;
  }
  send({ type: 'committed', through });
}

/**
 * Nothing retries after the close: while another program holds the write lock (a sqlite3 shell
 * in a transaction), the writes are tried again every CLOSE_RETRY_MS for up to
 * CLOSE_LOCK_WAIT_MS. busy_timeout does not cover it: a batch's transaction begins as a reader
 * (the seq lookup), and SQLite answers a reader that asks to write SQLITE_BUSY at once. Nor
 * would a wait inside SQLite do: a process exit (a second signal) cannot stop that one.
 */
async function waitOutWriteLock(): Promise<void> {
  const until = Date.now() + CLOSE_LOCK_WAIT_MS;
  for (;;) {
    try {
      await store.flush();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= until) return;
    }
    await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_MS));
  }
}

function answer(read: LogRead): Promise<unknown> {
  switch (read.method) {
    case 'get':
      return store.get(...read.args);
    case 'list':
      return store.list(...read.args);
    case 'usage':
      return store.usage(...read.args);
    case 'statistics':
      return store.statistics(...read.args);
    case 'keyUsage':
      return store.keyUsage(...read.args);
    case 'namedIds':
      return store.namedIds();
    case 'prune':
      return store.prune(...read.args);
    case 'loadStoredObjects':
      return store.loadStoredObjects(...read.args);
  }
}

port.on('message', (message: ToLogWriter) => {
  switch (message.type) {
    case 'append': {
      const { data } = message.sealed;
      store.appendBatch({ ...message.sealed, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) });
      uncommittedThrough = message.batch;
      // While writes fail, the retry writes this batch too: a commit per batch would report a failure per batch.
      if (retryTimer !== undefined) return;
      // Batches already queued behind this one arrive before the immediate runs: one commit writes them all (a transaction each) and acknowledges them at once.
      if (!commitScheduled) {
        commitScheduled = true;
        setImmediate(() => {
          commitScheduled = false;
          void commit();
        });
      }
      return;
    }
    case 'read':
      // A read flushes the store anyway; committing first also acknowledges what it wrote.
      void commit()
        .then(() => answer(message.read))
        .then(
          (value) => send({ type: 'answer', id: message.id, value }),
          (error: unknown) => send({ type: 'answer', id: message.id, error: transferableError(error) }),
        );
      return;
    case 'close':
      closing = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      // An error here ends the worker with a non-zero exit code, which close() on the main side
      // reports with this error's message (hence transferable).
      void commit().then(async () => {
        try {
          await waitOutWriteLock();
          await store.close();
        } catch (error) {
          throw transferableError(error);
        }
        port!.close();
      });
      return;
  }
});

send({ type: 'ready' });
