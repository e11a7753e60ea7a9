import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openWorkerLogStore, type LogRecord } from '../../src/store/logs/index.ts';
import { logRecord } from '../management/support/log-records.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// While the writer cannot write, what waits is bounded by bytes as well as by count, on both
// threads: recorded bodies go first (their records kept, the body marked `dropped`), then the
// oldest records, counted in `dropped`. Bodies let go are counted in `bodiesDropped` and reported.

const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);
const BODY = 100_000;
const FAIL_INSERTS = `CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`;

/** Another connection to the store's file: its trigger makes every insert of the writer fail, as a full disk would. */
function failingWrites(t: Test, dir: string): { recover(): void } {
  const db = new Database(join(dir, LOG_DB_FILE));
  db.exec(FAIL_INSERTS);
  t.teardown(() => {
    db.exec('DROP TRIGGER IF EXISTS fail_log_inserts');
    db.close();
  });
  return { recover: () => db.exec('DROP TRIGGER fail_log_inserts') };
}

const id = (i: number) => `req_${String(i).padStart(6, '0')}`;
const record = (i: number, over: Partial<LogRecord> = {}): LogRecord => logRecord({ request_id: id(i), created_at: T0 + i * 1000, ...over });
const withBody = (i: number) => record(i, { request_body: { state: 'recorded', original_bytes: BODY, body: String(i % 10).repeat(BODY) } });

/** Flushes until a flush succeeds: a retry that failed just before the writer recovered may still reject one. */
async function flushOnceWritesWork(store: { flush(): Promise<void> }): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.flush();
    } catch (error) {
      if (attempt >= 5 || !(error instanceof Error) || !/log inserts refused by the test/.test(error.message)) throw error;
    }
  }
}

t.test('beyond maxBufferedBytes the oldest recorded bodies are dropped, their records kept and written with the body marked dropped', async (t) => {
  const dir = tempDataDir(t);
  const cap = 3.5 * BODY;
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 1, flushIntervalMs: 60_000, maxBufferedBytes: cap, onError: (e) => errors.push(e) });
  t.teardown(() => store.close().catch(() => {}));
  const writes = failingWrites(t, dir);

  for (let i = 0; i < 10; i++) store.append(withBody(i));
  const flushed = store.flush();
  t.ok(store.bufferedBytes <= cap, `the records waiting take ${store.bufferedBytes} bytes, within the cap`);
  t.equal(store.buffered, 10, 'every record is kept');
  t.equal(store.dropped, 0, 'none dropped: dropping bodies was enough');
  t.equal(store.bodiesDropped, 7, 'the seven bodies let go are counted');
  await t.rejects(flushed, /log inserts refused by the test/);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const reports = errors.filter((e) => e instanceof Error && /bodies were let go/.test(e.message)).map((e) => (e as Error).message);
  t.same(reports.length, 1, 'the bodies let go are reported once');
  t.match(reports[0], /^7 recorded request bodies were let go .*: the log store could not keep up \(/, 'naming how many, and why');
  t.notMatch(reports[0], /request records were dropped/, 'no record was dropped');

  writes.recover();
  await flushOnceWritesWork(store);
  t.equal(store.buffered, 0);
  for (let i = 0; i < 7; i++) t.same((await store.get(id(i)))?.request_body, { state: 'dropped', original_bytes: BODY, body: '' }, `${id(i)}: its body dropped, and says so`);
  for (let i = 7; i < 10; i++) t.same((await store.get(id(i)))?.request_body, withBody(i).request_body, `${id(i)}: the three newest bodies are written whole`);
  t.same((await store.get(id(3)))?.usage, record(3).usage, 'the rest of a record whose body was dropped is intact');
  t.equal((await store.statistics({})).requests, 10);
});

t.test('once no body is left to drop, the oldest records are dropped and counted; the writer keeps the same ones', async (t) => {
  const dir = tempDataDir(t);
  const cap = 2 * BODY;
  const errors: unknown[] = [];
  const store = await openWorkerLogStore(dir, { batchSize: 100, flushIntervalMs: 60_000, maxBufferedBytes: cap, onError: (e) => errors.push(e) });
  t.teardown(() => store.close().catch(() => {}));
  const writes = failingWrites(t, dir);

  // One batch of ten bodies, about 1 MB: alone, it keeps its records but not its bodies.
  for (let i = 0; i < 10; i++) store.append(withBody(i));
  await t.rejects(store.flush(), /log inserts refused by the test/);
  t.ok(store.bufferedBytes <= cap, 'the bodies went');
  t.equal(store.dropped, 0);
  t.equal(store.bodiesDropped, 10, 'all ten counted as let go');

  for (let i = 10; i < 2010; i++) store.append(record(i));
  const flushed = store.flush();
  const kept = store.buffered;
  t.ok(store.bufferedBytes <= cap, `the records waiting take ${store.bufferedBytes} bytes, within the cap`);
  t.ok(store.dropped >= 10, `${store.dropped} records dropped, the oldest batch among them`);
  t.equal(kept + store.dropped, 2010, 'every record is either kept or counted as dropped');
  await t.rejects(flushed, /log inserts refused by the test/);
  await new Promise((resolve) => setTimeout(resolve, 0));
  t.ok(errors.some((e) => e instanceof Error && /request records were dropped/.test(e.message)), 'the drop is reported');

  writes.recover();
  await flushOnceWritesWork(store);
  t.equal(store.buffered, 0);
  t.equal((await store.statistics({})).requests, kept, 'the writer wrote exactly the records the main thread kept');
  t.equal(await store.get(id(0)), undefined, 'the oldest records are gone');
  t.ok(await store.get(id(2009)), 'the newest are written');
  t.ok(await store.get(id(2010 - kept)), 'the oldest kept is written');
  t.equal(await store.get(id(2009 - kept)), undefined, 'and none older');
});
