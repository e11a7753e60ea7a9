import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openSqliteLogStore, openWorkerLogStore } from '../../src/store/logs/index.ts';
import { LogBatchAppender } from '../../src/store/logs/log-batch-appender.ts';
import { LOG_SCHEMA } from '../../src/store/logs/log-schema.ts';
import { LogBatchWriter, type SealedLogBatch } from '../../src/store/logs/write-log-batch.ts';
import { MemoryStoredObjects } from '../../src/store/memory/memory-stored-objects.ts';
import { STORED_OBJECTS_KEPT, type StoredObject, type StoredObjectStore } from '../../src/store/stored-object-store.ts';
import { logRecord } from '../management/support/log-records.ts';

// The stored objects the data plane remembers (src/store/stored-object-store.ts), as logs.sqlite
// keeps them: written with the log batches, bounded, and read back newest last.

/** Options that never write on their own: only reads, flush and close move the open batch. */
const HOLD = { batchSize: 100_000, flushIntervalMs: 60_000 };

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-stored-objects-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const object = (id: string, over: Partial<StoredObject> = {}): StoredObject => ({
  key: `response:${id}`,
  groupId: 1,
  credentialId: 2,
  createdBy: 3,
  unbilled: false,
  upstreamModel: 'vendor-model',
  externalModel: 'gpt-test',
  ...over,
});

const keys = (objects: StoredObject[]): string[] => objects.map((o) => o.key);

/** The same changes on any store: a re-remembered object becomes the newest, a billed one keeps its place. */
async function orderAndBilling(t: Test, store: StoredObjectStore, reopen: () => Promise<StoredObjectStore>): Promise<void> {
  store.recordStoredObject({ type: 'remembered', object: object('a', { unbilled: true }) });
  store.recordStoredObject({ type: 'remembered', object: object('b', { unbilled: true }) });
  store.recordStoredObject({ type: 'remembered', object: object('c', { createdBy: null }) });
  store.recordStoredObject({ type: 'remembered', object: object('a', { credentialId: 9, unbilled: true }) });
  store.recordStoredObject({ type: 'billed', key: 'response:b' });
  const loaded = await (await reopen()).loadStoredObjects(10);
  t.same(keys(loaded), ['response:b', 'response:c', 'response:a'], 'oldest first; a remembered again is the newest, b billed kept its place');
  t.same(loaded[0], object('b', { unbilled: false }), 'the billing is kept');
  t.same(loaded[1], object('c', { createdBy: null }), 'a creator unknown is kept as such');
  t.same(loaded[2], object('a', { credentialId: 9, unbilled: true }), 'the latest state of a');
  t.same(keys(await (await reopen()).loadStoredObjects(2)), ['response:c', 'response:a'], 'a limit takes the newest');
}

t.test('logs.sqlite keeps the objects across a close and an open, in order, with their billing', async (t) => {
  const dir = tempDir(t);
  const first = openSqliteLogStore(dir);
  let current = first;
  t.teardown(() => current.close());
  await orderAndBilling(t, first, async () => {
    await current.close();
    current = openSqliteLogStore(dir);
    return current;
  });
});

t.test('the memory store keeps them the same way', async (t) => {
  const store = new MemoryStoredObjects();
  await orderAndBilling(t, store, async () => store);
});

t.test('through the log writer worker: a change is sent again to the worker that follows one that died', async (t) => {
  const dir = tempDir(t);
  const store = await openWorkerLogStore(dir, HOLD);
  t.teardown(() => store.close());
  store.recordStoredObject({ type: 'remembered', object: object('a', { unbilled: true }) });
  store.append(logRecord({ request_id: 'req_create' }));
  await store.flush();
  store.recordStoredObject({ type: 'billed', key: 'response:a' });
  store.append(logRecord({ request_id: 'req_bill' }));
  // Posted, not yet committed: the worker dies with it.
  void store.flush().catch(() => undefined);
  await store.crashWorkerForTesting();
  t.same(await store.loadStoredObjects(10), [object('a', { unbilled: false })], 'the billing reached the next worker');
  t.equal((await store.get('req_bill'))?.request_id, 'req_bill', 'with its record');
});

t.test('a change made before a flush waits for its record: batches sent again after a worker death bring back no older state', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.exec(LOG_SCHEMA);
  const writer = new LogBatchWriter(db);
  const sealed: SealedLogBatch[] = [];
  const appender = new LogBatchAppender((batch) => sealed.push(batch), HOLD);
  // A create: its change, then a flush (a read, the timer) before its record is appended.
  appender.appendStoredObject({ type: 'remembered', object: object('a', { unbilled: true }) });
  appender.flushAll();
  appender.append(logRecord({ request_id: 'req_create' }));
  appender.flushAll();
  // A read by its creator bills it.
  appender.appendStoredObject({ type: 'remembered', object: object('a', { unbilled: true }) });
  appender.appendStoredObject({ type: 'billed', key: 'response:a' });
  appender.append(logRecord({ request_id: 'req_bill' }));
  appender.flushAll();
  t.ok(sealed.every((batch) => batch.count > 0), 'no batch of changes alone');
  const billed = () => db.prepare('SELECT unbilled FROM stored_objects').pluck().all();
  for (const batch of sealed) writer.write(batch);
  t.same(billed(), [0], 'billed once stored');
  // The worker died before acknowledging them: the next one receives them all again.
  for (const batch of sealed) writer.write(batch);
  t.same(billed(), [0], 'still billed: the read is not billed again after a restart');
});

t.test('a stop without closing (a crash) keeps what was committed, each change with the records of its batch', async (t) => {
  const dir = tempDir(t);
  const crashed = openSqliteLogStore(dir, HOLD);
  crashed.recordStoredObject({ type: 'remembered', object: object('a', { unbilled: true }) });
  crashed.append(logRecord({ request_id: 'req_create' }));
  await crashed.flush();
  // Still in the open batch when the process ends: lost, and its record with it.
  crashed.recordStoredObject({ type: 'billed', key: 'response:a' });
  crashed.append(logRecord({ request_id: 'req_bill' }));
  const next = openSqliteLogStore(dir, HOLD);
  t.teardown(async () => {
    await next.close();
    await crashed.close();
  });
  t.same(await next.loadStoredObjects(10), [object('a', { unbilled: true })], 'the committed create is kept; the billing not committed is not');
  t.ok(await next.get('req_create'), "the create's record is there");
  t.equal(await next.get('req_bill'), undefined, "the billing read's record is lost with it: the next read bills it, once");
});

t.test(`the table keeps the newest ${STORED_OBJECTS_KEPT} objects, pruned as it grows`, async (t) => {
  const dir = tempDir(t);
  const store = openSqliteLogStore(dir);
  t.teardown(() => store.close());
  const total = STORED_OBJECTS_KEPT + 2000;
  for (let i = 0; i < total; i++) store.recordStoredObject({ type: 'remembered', object: object(String(i)) });
  // Changes wait for a record to ride with.
  store.append(logRecord({ request_id: 'req_reads' }));
  await store.flush();
  const rows = () => {
    const db = new Database(join(dir, LOG_DB_FILE), { readonly: true });
    try {
      return db.prepare('SELECT COUNT(*) FROM stored_objects').pluck().get() as number;
    } finally {
      db.close();
    }
  };
  t.ok(rows() < STORED_OBJECTS_KEPT + 1024, `${rows()} rows: within the bound plus one prune's worth`);
  const loaded = await store.loadStoredObjects(STORED_OBJECTS_KEPT);
  t.equal(loaded.length, STORED_OBJECTS_KEPT);
  t.equal(loaded[0]!.key, `response:${total - STORED_OBJECTS_KEPT}`, 'the oldest kept');
  t.equal(loaded.at(-1)!.key, `response:${total - 1}`, 'the newest last');
});

t.test('a logs database from before the table gains it when opened', async (t) => {
  const dir = tempDir(t);
  await openSqliteLogStore(dir).close();
  const db = new Database(join(dir, LOG_DB_FILE));
  db.exec('DROP TABLE stored_objects');
  db.close();
  const store = openSqliteLogStore(dir);
  t.teardown(() => store.close());
  t.same(await store.loadStoredObjects(10), [], 'none kept yet');
  store.recordStoredObject({ type: 'remembered', object: object('a') });
  store.append(logRecord({ request_id: 'req_create' }));
  t.same(await store.loadStoredObjects(10), [object('a')]);
});
