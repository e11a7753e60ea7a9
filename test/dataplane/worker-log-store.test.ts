import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openSqliteLogStore, openWorkerLogStore, type LogRecord, type RecordedRequestBody } from '../../src/store/logs/index.ts';
import { LogBatchEncoder } from '../../src/store/logs/encode-log-batch.ts';
import type { FromLogWriter, ToLogWriter } from '../../src/store/logs/log-writer-messages.ts';
import { LOG_WRITER_YOUNG_GENERATION_MB, startLogWriter } from '../../src/store/logs/start-log-writer.ts';
import { logRecord } from '../management/support/log-records.ts';

/** The shared behaviour is tested in log-store.test.ts; these are what the worker adds: ordering across threads, shutdown, crashes, failed writes. */

const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);
/** Options that never post on their own: only reads, flush and close move records to the worker. */
const HOLD = { batchSize: 100_000, flushIntervalMs: 60_000 };

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-worker-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const record = (i: number, over: Partial<LogRecord> = {}): LogRecord =>
  logRecord({ request_id: `req_${String(i).padStart(6, '0')}`, created_at: T0 + i * 1000, ...over });

/** Counts what is on disk with the synchronous store, independently of the worker. */
async function countOnDisk(dir: string): Promise<{ requests: number; ids: Set<string> }> {
  const store = openSqliteLogStore(dir);
  try {
    const ids = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await store.list({}, cursor === undefined ? { limit: 500 } : { limit: 500, cursor });
      for (const item of page.items) ids.add(item.request_id);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return { requests: (await store.statistics({})).requests, ids };
  } finally {
    await store.close();
  }
}

/** A second connection to the store's database, as another process would open it; closed (its transaction rolled back) in teardown. */
function otherConnection(t: Test, dir: string): Database.Database {
  const db = new Database(join(dir, LOG_DB_FILE));
  t.teardown(() => {
    if (db.inTransaction) db.exec('ROLLBACK');
    db.close();
  });
  return db;
}

/** The next message of `type` the worker sends. */
function nextMessage(worker: Worker, type: FromLogWriter['type']): Promise<FromLogWriter> {
  return new Promise((resolve) => {
    const listener = (message: FromLogWriter) => {
      if (message.type !== type) return;
      worker.off('message', listener);
      resolve(message);
    };
    worker.on('message', listener);
  });
}

const ids = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, k) => record(from + k).request_id);

t.test('every read sees the records appended just before it', async (t) => {
  const store = await openWorkerLogStore(tempDir(t), HOLD);
  t.teardown(() => store.close());
  store.append(record(1));
  t.equal((await store.get('req_000001'))?.request_id, 'req_000001', 'get');
  store.append(record(2));
  t.equal((await store.list({}, { limit: 10 })).items.length, 2, 'list');
  store.append(record(3));
  t.equal((await store.usage({ bucket: 'day', group_by: [] }))[0]?.requests, 3, 'usage');
  store.append(record(4));
  t.equal((await store.statistics({})).requests, 4, 'statistics');
  // Reads issued back to back without awaiting: each sees what was appended before it, not after.
  const before = store.statistics({});
  store.append(record(5));
  const after = store.statistics({});
  t.same([(await before).requests, (await after).requests], [4, 5]);
});

t.test('flush resolves once the worker committed everything appended before it', async (t) => {
  const dir = tempDir(t);
  const store = await openWorkerLogStore(dir, HOLD);
  t.teardown(() => store.close());
  for (let i = 0; i < 300; i++) store.append(record(i));
  t.equal(store.buffered, 300);
  await store.flush();
  t.equal(store.buffered, 0, 'all acknowledged');
  t.equal((await countOnDisk(dir)).requests, 300, 'committed, as another connection sees it');
});

t.test('close loses nothing: buffered and in-flight records are on disk after it', async (t) => {
  const dir = tempDir(t);
  // Small batches so that many are posted and unacknowledged when close() starts.
  const store = await openWorkerLogStore(dir, { batchSize: 7, flushIntervalMs: 60_000 });
  const N = 3000;
  for (let i = 0; i < N; i++) store.append(record(i));
  await store.close();
  t.throws(() => store.append(record(N)), /closed/);
  await t.rejects(store.statistics({}), /closed/);
  await store.flush();
  const onDisk = await countOnDisk(dir);
  t.equal(onDisk.requests, N);
  t.equal(onDisk.ids.size, N);
});

t.test('a worker killed mid-way loses nothing, and the store keeps working', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 50, flushIntervalMs: 60_000, onError: (e) => errors.push(e) });
  t.teardown(() => store.close());

  for (let i = 0; i < 1000; i++) store.append(record(i));
  await store.flush();
  // These are posted (flush posts before it waits) and likely not yet committed when the worker dies.
  for (let i = 1000; i < 2000; i++) store.append(record(i));
  const flushed = store.flush();
  const reading = store.statistics({});
  await store.crashWorkerForTesting();
  for (let i = 2000; i < 3000; i++) store.append(record(i));

  await flushed;
  t.ok((await reading).requests >= 2000, 'a read in flight is answered, by the old worker or the new one');
  t.equal((await store.statistics({})).requests, 3000, 'nothing lost');
  t.same(await store.get('req_001500'), record(1500));
  t.equal(errors.length, 1, 'the death is reported once');
  t.match(String(errors[0]), /log writer worker exited/);

  // Dead twice: the second restart also re-sends and answers.
  await store.crashWorkerForTesting();
  store.append(record(3000));
  t.equal((await store.get('req_003000'))?.request_id, 'req_003000');
  t.equal(store.dropped, 0);

  await store.close();
  const onDisk = await countOnDisk(dir);
  t.equal(onDisk.requests, 3001);
  t.equal(onDisk.ids.size, 3001, 'no duplicates from re-sent batches');
});

t.test('the writer thread runs with its own small young generation, not the main thread\'s', async (t) => {
  const worker = startLogWriter({ dataDir: tempDir(t), maxBuffered: 100_000, maxBufferedBytes: 128 * 1024 * 1024 });
  await nextMessage(worker, 'ready');
  t.equal(worker.resourceLimits?.maxYoungGenerationSizeMb, LOG_WRITER_YOUNG_GENERATION_MB, 'as V8 reports it for the thread');
  worker.postMessage({ type: 'close' } satisfies ToLogWriter);
  await new Promise((resolve) => worker.once('exit', resolve));
});

t.test('a batch a worker committed but died before acknowledging is stored once when sent again to the next worker', async (t) => {
  const dir = tempDir(t);
  const encoder = new LogBatchEncoder();
  const bytes = Buffer.from([0x00, 0xff, 0xc3]);
  const bodies = new Map<number, RecordedRequestBody>([
    [3, { state: 'recorded', original_bytes: 2, body: {} }],
    [5, { state: 'truncated', original_bytes: 9, body: bytes.toString('base64'), encoding: 'base64' }],
  ]);
  for (let i = 0; i < 20; i++) encoder.append(record(i, { access_key_id: 7, request_body: bodies.get(i) }));
  // What WorkerLogStore keeps for an unacknowledged batch and posts again to a new worker: the same sealed batch, with its key.
  const sealed = { key: 'store-a.1', ...encoder.seal()! };
  for (const round of ['first worker', 'second worker']) {
    const worker = startLogWriter({ dataDir: dir, maxBuffered: 100_000, maxBufferedBytes: 128 * 1024 * 1024 });
    await nextMessage(worker, 'ready');
    worker.postMessage({ type: 'append', batch: 1, sealed } satisfies ToLogWriter);
    t.match(await nextMessage(worker, 'committed'), { through: 1 }, `committed by the ${round}`);
    // The first dies as a crash would, its acknowledgement never read; the second closes.
    if (round === 'first worker') await worker.terminate();
    else {
      worker.postMessage({ type: 'close' } satisfies ToLogWriter);
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  }
  const store = openSqliteLogStore(dir);
  t.teardown(() => store.close());
  t.equal((await store.statistics({})).requests, 20, 'statistics count the batch once');
  t.same((await store.usage({ bucket: 'day', group_by: [] })).map((r) => r.requests), [20], 'usage too');
  const quota = await store.keyUsage(7);
  t.same([quota.requests, quota.tokens], [20, 20 * 15], 'and quotas');
  t.ok(Math.abs(quota.cost - 20 * 0.001) < 1e-12, 'cost once');
  t.equal((await store.list({}, { limit: 500 })).items.length, 20, 'the list holds each record once');
  t.equal((await store.get('req_000003'))?.request_body?.original_bytes, 2, 'with its body');
  const binary = (await store.get('req_000005'))?.request_body;
  t.match(binary, { state: 'truncated', original_bytes: 9, encoding: 'base64' }, 'a base64 body keeps its encoding');
  t.ok(Buffer.from(String(binary?.body), 'base64').equals(bytes), 'and its bytes');
});

t.test('a prune in flight when its worker dies is sent again to the next worker', async (t) => {
  const dir = tempDir(t);
  const store = await openWorkerLogStore(dir, { ...HOLD, onError: () => {} });
  t.teardown(() => store.close());
  for (let i = 0; i < 3000; i++) store.append(record(i));
  const pruning = store.prune(T0 + 2000 * 1000);
  await store.crashWorkerForTesting();
  // The first worker may have deleted some batches before it died; the next one deletes the rest.
  t.ok((await pruning) <= 2000, 'the prune is answered');
  t.equal((await store.statistics({})).requests, 1000, 'only the records from the cutoff on remain');
  t.same((await countOnDisk(dir)).ids, new Set(ids(2000, 3000)));
});

t.test('close during a prune ends it: close succeeds and the prune settles', async (t) => {
  const dir = tempDir(t);
  const store = await openWorkerLogStore(dir, HOLD);
  for (let i = 0; i < 5000; i++) store.append(record(i));
  await store.flush();
  const pruning = store.prune(T0 + 5000 * 1000).then(
    (deleted) => deleted,
    (error: unknown) => error,
  );
  await store.close();
  const outcome = await pruning;
  t.ok(typeof outcome === 'number' || (outcome instanceof Error && /closed/.test(outcome.message)), 'answered, or refused as closed', { outcome });
  const onDisk = await countOnDisk(dir);
  t.same(onDisk.ids, new Set(ids(5000 - onDisk.requests, 5000)), 'whatever was deleted, it was the oldest records, in whole batches');
  t.equal(onDisk.requests % 1000, 0);
});

t.test('a worker that cannot open the database fails the open, clearly', async (t) => {
  const dir = tempDir(t);
  const notADirectory = join(dir, 'file');
  writeFileSync(notADirectory, '');
  const errors: unknown[] = [];
  await t.rejects(openWorkerLogStore(notADirectory, { onError: (e) => errors.push(e) }), { name: 'LogFileError', file: join(notADirectory, 'logs.sqlite'), message: /logs\.sqlite: cannot be opened: .*(EEXIST|ENOTDIR)/ });
  t.same(errors, [], 'the failed open is the rejection alone, not also a reported worker death');
});

t.test('a failed commit is reported, and the worker retries on its own until every record is written once', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 10, flushIntervalMs: 60_000, onError: (e) => errors.push(e) });
  t.teardown(() => store.close());
  // Teardowns run last in, first out: should the test stop half-way, the lock is released before the store closes.
  const locker = otherConnection(t, dir);

  for (let i = 0; i < 50; i++) store.append(record(i));
  await store.flush();
  t.equal(errors.length, 0);

  // Another connection holds the write lock: the worker's commit fails with SQLITE_BUSY (at once: see waitOutWriteLock in log-writer-worker.ts).
  locker.exec('BEGIN EXCLUSIVE');
  for (let i = 50; i < 200; i++) store.append(record(i));
  await t.rejects(store.flush(), new Error('SQLITE_BUSY: database is locked'), 'a flush waiting on the failed commit rejects, with the SQLite error');
  t.ok(errors.length >= 1, 'onError is called');
  t.ok(errors.every((e) => e instanceof Error && e.message === 'SQLITE_BUSY: database is locked'), 'with the SQLite error');
  t.equal(store.buffered, 150, 'the failed records are kept');
  t.equal(store.dropped, 0);

  // From here nothing new is posted to the worker: only its own retry can commit the records.
  locker.exec('ROLLBACK');
  await store.flush();
  t.equal(store.buffered, 0, 'all acknowledged after the retry');
  t.equal(store.dropped, 0);
  t.equal((await store.statistics({})).requests, 200, 'the store reads every record');
  t.same(await store.get('req_000123'), record(123));

  await store.close();
  const onDisk = await countOnDisk(dir);
  t.equal(onDisk.requests, 200, 'no record lost or written twice');
  t.same([...onDisk.ids].sort(), ids(0, 200));
});

t.test('a stop while another program holds the write lock briefly waits for it and writes every record', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { ...HOLD, onError: (e) => errors.push(e) });
  const locker = otherConnection(t, dir);
  for (let i = 0; i < 50; i++) store.append(record(i));
  await store.flush();

  // A sqlite3 shell in a write transaction, ended well within the close's 5 s wait
  // (CLOSE_LOCK_WAIT_MS). A commit begins as a reader (BEGIN, then a SELECT), and a reader that
  // asks to write while another connection writes gets SQLITE_BUSY at once, busy_timeout or
  // not: without the close's own retries the stop lost them all.
  locker.exec('BEGIN IMMEDIATE');
  for (let i = 50; i < 200; i++) store.append(record(i));
  const release = setTimeout(() => locker.exec('ROLLBACK'), 300);
  t.teardown(() => clearTimeout(release));
  // The flush before the worker's close still fails at once (a warning); the close then waits.
  await store.close();
  t.ok(errors.every((e) => e instanceof Error && e.message === 'SQLITE_BUSY: database is locked'), 'at most that warning');
  const onDisk = await countOnDisk(dir);
  t.equal(onDisk.requests, 200, 'every record written once');
  t.same([...onDisk.ids].sort(), ids(0, 200));
});

t.test('beyond maxBuffered the oldest unacknowledged records are dropped and counted; the newest are committed once writes work', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 10, flushIntervalMs: 60_000, maxBuffered: 30, onError: (e) => errors.push(e) });
  t.teardown(() => store.close());
  const db = otherConnection(t, dir);
  t.teardown(() => db.exec('DROP TRIGGER IF EXISTS fail_log_inserts'));

  for (let i = 0; i < 20; i++) store.append(record(i));
  await store.flush();
  t.equal(store.dropped, 0, 'nothing dropped while writes are committed');

  // A trigger, added by another connection, makes every insert of the worker fail with a SQLite error.
  db.exec(`CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`);
  for (let i = 20; i < 120; i++) store.append(record(i));
  const flushed = store.flush();
  // flush() posted all ten batches of ten; only the three newest fit in maxBuffered.
  t.equal(store.dropped, 70, 'the 70 oldest unacknowledged records are dropped');
  t.equal(store.buffered, 30, 'the 30 newest are kept');
  await t.rejects(flushed, /log inserts refused by the test/);
  t.ok(errors.some((e) => e instanceof Error && /log inserts refused by the test/.test(e.message)), 'the failed write is reported');

  // The worker keeps no more than the same 30: once writes work, its own retry commits exactly those.
  db.exec('DROP TRIGGER fail_log_inserts');
  // A retry that failed just before the trigger was dropped may still reject one flush; a later retry commits.
  await flushOnceWritesWork(store, /log inserts refused by the test/);
  t.equal(store.buffered, 0);
  t.equal(store.dropped, 70, 'dropped counts each record once');
  t.equal((await store.statistics({})).requests, 50);

  await store.close();
  const onDisk = await countOnDisk(dir);
  t.equal(onDisk.requests, 50);
  t.same([...onDisk.ids].sort(), [...ids(0, 20), ...ids(90, 120)], 'the records before the failure and the 30 newest, none of the dropped ones');
});

/** Flushes until a flush succeeds, tolerating a few rejections with `expected` from retries already under way. */
async function flushOnceWritesWork(store: { flush(): Promise<void> }, expected: RegExp): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.flush();
    } catch (error) {
      if (attempt >= 5 || !(error instanceof Error) || !expected.test(error.message)) throw error;
    }
  }
}

t.test('records dropped beyond maxBuffered are reported through onError, naming the write failure, without one report per drop', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 10, flushIntervalMs: 60_000, maxBuffered: 30, onError: (e) => errors.push(e) });
  t.teardown(() => store.close().catch(() => {}));
  const db = otherConnection(t, dir);
  t.teardown(() => db.exec('DROP TRIGGER IF EXISTS fail_log_inserts'));
  db.exec(`CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`);

  for (let i = 0; i < 10; i++) store.append(record(i));
  await t.rejects(store.flush(), /log inserts refused by the test/, 'writes fail');
  const dropReports = () => errors.filter((e) => e instanceof Error && /request records were dropped/.test(e.message)).map((e) => (e as Error).message);
  t.same(dropReports(), [], 'nothing dropped yet, nothing reported');

  // 110 records in batches of ten wait; only the 30 newest fit.
  for (let i = 10; i < 110; i++) store.append(record(i));
  const first = store.flush().catch(() => {});
  t.equal(store.dropped, 80);
  await new Promise((resolve) => setTimeout(resolve, 0));
  t.equal(dropReports().length, 1, 'one report for the whole burst');
  t.match(dropReports()[0], /^80 request records were dropped: the log store could not keep up \(.*log inserts refused by the test\)$/, 'with the number and the cause');

  for (let i = 110; i < 160; i++) store.append(record(i));
  const second = store.flush().catch(() => {});
  t.equal(store.dropped, 130, 'every drop is counted');
  await new Promise((resolve) => setTimeout(resolve, 0));
  t.equal(dropReports().length, 1, 'drops soon after a report wait for the next one');
  await Promise.all([first, second]);
});

t.test('close with a failing store rejects naming how many records were not written, and why', async (t) => {
  const dir = tempDir(t);
  const store = await openWorkerLogStore(dir, { ...HOLD, onError: () => {} });
  const db = otherConnection(t, dir);
  t.teardown(() => db.exec('DROP TRIGGER IF EXISTS fail_log_inserts'));
  for (let i = 0; i < 5; i++) store.append(record(i));
  await store.flush();
  db.exec(`CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`);
  for (let i = 5; i < 30; i++) store.append(record(i));

  const outcome = await store.close().then(() => undefined, (e: unknown) => e);
  t.ok(outcome instanceof Error, 'close rejects');
  const message = (outcome as Error).message;
  t.match(message, /^25 request records could not be written: .*log inserts refused by the test; /, 'the 25 appended after the failure began, and the cause');
  t.match(message, /log writer worker exited with code 1 while closing: .*log inserts refused by the test/, "the worker's own close failure arrives with its message");
  t.notMatch(message, /undefined/);
  db.exec('DROP TRIGGER fail_log_inserts');
  t.equal((await countOnDisk(dir)).requests, 5, 'only the records written before the failure are on disk');
});

t.test('while writes fail, batches posted meanwhile wait for the retry: failures are reported about once a second, not once per batch', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 10, flushIntervalMs: 60_000, onError: (e) => errors.push(e) });
  t.teardown(() => store.close());
  const db = otherConnection(t, dir);
  t.teardown(() => db.exec('DROP TRIGGER IF EXISTS fail_log_inserts'));
  db.exec(`CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`);

  // Twenty batches, each reaching the worker on its own, within about half a second.
  for (let b = 0; b < 20; b++) {
    for (let i = b * 10; i < (b + 1) * 10; i++) store.append(record(i));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const reports = errors.filter((e) => e instanceof Error && /log inserts refused by the test/.test(e.message)).length;
  t.ok(reports >= 1, 'the failure is reported');
  // The first commit and perhaps a retry report; the bound leaves seconds of slack for a slow machine.
  t.ok(reports <= 3, 'not once per batch', { reports });
  t.equal(store.buffered, 200, 'every record is kept');

  db.exec('DROP TRIGGER fail_log_inserts');
  await flushOnceWritesWork(store, /log inserts refused by the test/);
  t.equal(store.buffered, 0, 'the retry writes them all');
  await store.close();
  t.same([...(await countOnDisk(dir)).ids].sort(), ids(0, 200));
});

t.test('a logs.sqlite removed under the running store fails the writes, clearly, and the records are kept, not acknowledged', async (t) => {
  const dir = tempDir(t);
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 10, flushIntervalMs: 60_000, onError: (e) => errors.push(e) });
  t.teardown(() => store.close().catch(() => {}));
  for (let i = 0; i < 10; i++) store.append(record(i));
  await store.flush();

  rmSync(join(dir, LOG_DB_FILE));
  // The worker looks at the file at most once a second; until then its writes still go to the removed file.
  const message = 'logs.sqlite was removed or replaced; restart the gateway to recreate it';
  let next = 10;
  let failure: unknown;
  for (let attempt = 0; attempt < 40 && failure === undefined; attempt++) {
    for (const end = next + 10; next < end; next++) store.append(record(next));
    await store.flush().catch((error: unknown) => (failure = error));
    if (failure === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.match(failure, { message }, 'a flush rejects, saying what happened and what to do');
  t.ok(errors.some((e) => e instanceof Error && e.message === message), 'the failure goes to onError');
  t.equal(store.buffered, 10, 'the batch whose write failed is kept');

  // It stays failed: the retries do not write to the removed file either.
  for (const end = next + 10; next < end; next++) store.append(record(next));
  await t.rejects(store.flush(), { message });
  t.equal(store.buffered, 20, 'nothing appended after the failure is acknowledged');
  t.equal(store.dropped, 0);
});
