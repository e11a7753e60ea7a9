import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openSqliteLogStore, openWorkerLogStore, type LogFilter, type LogRecord } from '../../src/store/logs/index.ts';
import type { LogReader } from '../../src/store/log-store.ts';
import { openSqliteLogReader } from '../../src/store/logs/sqlite-log-reader.ts';
import { seededRandom as random, type SeededRandom as Random } from '../helpers/seeded-random.ts';
import { startGateway } from '../management/support/gateway.ts';
import { logRecord } from '../management/support/log-records.ts';

// log_batch_combos (a bloom per batch of the combinations of key, Group, model, status and
// error code its records hold) only rules batches out: every list with several filters must
// return what filtering the appended records returns, a batch it rules out is not read, a file
// without it is filled at open (and read meanwhile), and prune keeps a bloom per batch.

const BASE = Date.UTC(2026, 4, 1);
const KEYS = [1, 2, 3, 4, 5, 6, null];
const GROUPS = ['g1', 'g2', 'g3', 'g4', null];
const MODELS = ['m-a', 'm-b', 'm-c', 'm-d', 'm-e', null];
const STATUSES = [200, 200, 200, 200, 400, 429, 502];
const ERRORS = ['upstream_error', 'rate_limited', 'upstream_stream_broken'];

function dir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-combos-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

function record(request_id: string, created_at: number, key: number | null, group: string | null, model: string | null, status = 200, error_code: string | null = null): LogRecord {
  return logRecord({ request_id, created_at, access_key_id: key, group_id: group, external_model: model, status, error_code, timings: { started_at: created_at, ttfb_ms: 10, duration_ms: 20 } });
}

/** Records with unique created_at in shuffled order, so that batches overlap in time. */
function records(r: Random, n: number): LogRecord[] {
  const times = Array.from({ length: n }, (_, i) => BASE + i * 1000);
  for (let i = n - 1; i > 0; i--) {
    const j = r.int(0, i);
    [times[i], times[j]] = [times[j]!, times[i]!];
  }
  return times.map((at, i) => {
    const status = r.pick(STATUSES);
    const error = status >= 400 ? r.pick(ERRORS) : r.chance(0.05) ? 'upstream_stream_broken' : null;
    return record(`cb-${i}`, at, r.pick(KEYS), r.pick(GROUPS), r.pick(MODELS), status, error);
  });
}

/** Two to four of key, Group, model, status and error code, with values that exist and some that never do. */
function randomFilter(r: Random): LogFilter {
  const dims = ['access_key_id', 'group_id', 'model', 'status', 'error_code'] as const;
  const chosen = dims.filter(() => r.chance(0.5));
  while (chosen.length < 2) chosen.push(r.pick(dims.filter((d) => !chosen.includes(d))));
  const filter: LogFilter = {};
  for (const d of chosen.slice(0, 4)) {
    if (d === 'access_key_id') filter.access_key_id = r.int(1, 7);
    if (d === 'group_id') filter.group_id = r.pick(['g1', 'g2', 'g3', 'g4', 'g9']);
    if (d === 'model') filter.model = r.pick(['m-a', 'm-b', 'm-c', 'm-d', 'm-e', 'm-z']);
    if (d === 'status') filter.status = r.pick([200, 400, 429, 502, 503]);
    if (d === 'error_code') filter.error_code = r.pick([...ERRORS, 'other']);
  }
  if (r.chance(0.2)) filter.from = BASE + r.int(0, 1000) * 1000;
  return filter;
}

/** The request ids a filter keeps, newest first, by filtering the records themselves. */
function expected(all: readonly LogRecord[], f: LogFilter): string[] {
  return all
    .filter(
      (x) =>
        (f.access_key_id === undefined || x.access_key_id === f.access_key_id) &&
        (f.group_id === undefined || x.group_id === f.group_id) &&
        (f.model === undefined || x.external_model === f.model) &&
        (f.status === undefined || x.status === f.status) &&
        (f.error_code === undefined || x.error_code === f.error_code) &&
        (f.from === undefined || x.created_at >= f.from),
    )
    .sort((a, b) => b.created_at - a.created_at)
    .map((x) => x.request_id);
}

async function listAll(store: Pick<LogReader, 'list'>, filter: LogFilter, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.list(filter, { limit, cursor });
    ids.push(...page.items.map((x) => x.request_id));
    if (page.next_cursor === null) return ids;
    cursor = page.next_cursor;
  }
}

async function compareLists(t: Test, r: Random, store: Pick<LogReader, 'list'>, all: readonly LogRecord[], label: string, lists = 60): Promise<void> {
  let failures = 0;
  let matched = 0;
  for (let n = 0; n < lists; n++) {
    const filter = randomFilter(r);
    const want = expected(all, filter);
    const got = await listAll(store, filter, r.pick([1, 7, 50, 500]));
    matched += want.length;
    if (JSON.stringify(got) !== JSON.stringify(want) && ++failures <= 3) t.fail(`${label}: list ${JSON.stringify(filter)}`, { got: got.length, want: want.length });
  }
  t.equal(failures, 0, `${label}: ${lists} lists with several filters give what filtering the records gives (${matched} records)`);
}

function combos(file: string): { batches: number[]; blooms: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    return {
      batches: db.prepare('SELECT id FROM log_batches ORDER BY id').pluck().all() as number[],
      blooms: db.prepare('SELECT batch_id FROM log_batch_combos ORDER BY batch_id').pluck().all() as number[],
    };
  } finally {
    db.close();
  }
}

/** A log store in `d` (batches of 100, written only when flushed or closed) holding `all`. */
function storeHolding(d: string, all: readonly LogRecord[]): ReturnType<typeof openSqliteLogStore> {
  const store = openSqliteLogStore(d, { batchSize: 100, flushIntervalMs: 3_600_000 });
  for (const x of all) store.append(x);
  return store;
}

t.test('lists with several filters match the records, through SqliteLogStore, WorkerLogStore and the reader', async (t) => {
  const r = random(20261127);
  const all = records(r, 3000);
  const d = dir(t);
  const store = storeHolding(d, all);
  await store.flush();
  await compareLists(t, r, store, all, 'SqliteLogStore');
  await store.close();
  const { batches, blooms } = combos(join(d, LOG_DB_FILE));
  t.ok(batches.length >= 30, `${batches.length} batches`);
  t.same(blooms, batches, 'a bloom per batch');
  const reader = openSqliteLogReader(d)!;
  await compareLists(t, r, reader, all, 'SqliteLogReader');
  reader.close();

  const w = dir(t);
  const worker = await openWorkerLogStore(w, { batchSize: 100 });
  for (const x of all) worker.append(x);
  await compareLists(t, r, worker, all, 'WorkerLogStore', 30);
  await worker.close();
});

t.test('a batch whose bloom rules the filter out is not read', async (t) => {
  const d = dir(t);
  const store = openSqliteLogStore(d, { batchSize: 1000, flushIntervalMs: 3_600_000 });
  // Batch 1 holds key 1 and Group g2, but never together; batch 2 holds them together.
  store.append(record('a1', BASE + 1000, 1, 'g1', 'm-a'));
  store.append(record('a2', BASE + 2000, 2, 'g2', 'm-b', 502, 'upstream_error'));
  await store.flush();
  store.append(record('b1', BASE + 500, 1, 'g2', 'm-b'));
  await store.flush();
  await store.close();

  const file = join(d, LOG_DB_FILE);
  const db = new Database(file);
  const [first] = db.prepare('SELECT id FROM log_batches ORDER BY id').pluck().all() as number[];
  const dims = db.prepare('SELECT kind, value FROM log_batch_dims WHERE batch_id = ? ORDER BY kind, value').raw().all(first) as unknown[][];
  t.same(dims.slice(0, 4), [[1, 1], [1, 2], [2, 'g1'], [2, 'g2']], 'its dimensions alone would not rule batch 1 out');
  // A blob that cannot be decoded: reading it fails the list.
  db.prepare('UPDATE log_batches SET data = ? WHERE id = ?').run(Buffer.from([0xff, 0, 0, 0, 0, 0]), first);
  db.close();

  const reopened = openSqliteLogStore(d);
  t.teardown(() => reopened.close());
  for (const filter of [{ access_key_id: 1, group_id: 'g2' }, { access_key_id: 1, model: 'm-b' }, { group_id: 'g2', model: 'm-b', status: 200 }, { access_key_id: 1, status: 200, group_id: 'g2' }]) {
    t.same((await reopened.list(filter, { limit: 10 })).items.map((x) => x.request_id), ['b1'], `${JSON.stringify(filter)} skips batch 1`);
  }
  await t.rejects(reopened.list({ access_key_id: 1, group_id: 'g1' }, { limit: 10 }), /unknown version/, 'a filter batch 1 may hold reads it');
});

t.test('a file without log_batch_combos is read without it, then filled at open', async (t) => {
  const r = random(77);
  const all = records(r, 2000);
  const d = dir(t);
  const store = storeHolding(d, all);
  await store.close();
  const file = join(d, LOG_DB_FILE);
  const db = new Database(file);
  db.exec('DROP TABLE log_batch_combos');
  db.close();

  const reader = openSqliteLogReader(d)!;
  await compareLists(t, r, reader, all, 'reader, no table', 30);
  reader.close();

  const notices: string[] = [];
  const reopened = openSqliteLogStore(d, { onNotice: (m) => notices.push(m) });
  t.match(notices, [/indexing request-log batches .*\(20 batches\)/], 'the fill says so');
  await compareLists(t, r, reopened, all, 'after the fill', 30);
  await reopened.close();
  const { batches, blooms } = combos(file);
  t.same(blooms, batches, 'every batch has its bloom');

  // Batches that lost their blooms are read, not skipped.
  const partial = new Database(file);
  partial.exec('DELETE FROM log_batch_combos WHERE batch_id % 2 = 0');
  partial.close();
  const reader2 = openSqliteLogReader(d)!;
  await compareLists(t, r, reader2, all, 'reader, half the blooms missing', 30);
  reader2.close();
  const again: string[] = [];
  (await openSqliteLogStore(d, { onNotice: (m) => again.push(m) }).close());
  t.match(again, [/\(10 batches\)/], 'the missing ones are filled at the next open');
  t.same(combos(file).blooms, batches);

  // As an older version leaves it: blooms of batches it pruned, and batches it wrote without one, as many of each.
  const older = new Database(file);
  const [first, second] = batches as number[];
  older.prepare('DELETE FROM log_batches WHERE id = ?').run(first);
  older.prepare('DELETE FROM log_batch_combos WHERE batch_id = ?').run(second);
  older.close();
  const afterOlder: string[] = [];
  (await openSqliteLogStore(d, { onNotice: (m) => afterOlder.push(m) }).close());
  t.match(afterOlder, [/\(1 batches\)/], 'the batch without a bloom is filled though the counts were equal');
  t.same(combos(file).blooms, combos(file).batches, 'and the pruned batch has no bloom left');
});

t.test('prune keeps a bloom per batch, for rewritten batches too', async (t) => {
  const r = random(4242);
  // In time order, so that prune deletes the older batches whole and rewrites the one it cuts.
  const all = records(r, 2000).sort((a, b) => a.created_at - b.created_at);
  const d = dir(t);
  const store = storeHolding(d, all);
  await store.flush();
  const cut = BASE + 1000 * 1000 + 500;
  t.ok((await store.prune(cut)) > 0);
  const kept = all.filter((x) => x.created_at >= cut);
  await compareLists(t, r, store, kept, 'after prune', 40);
  await store.close();
  const { batches, blooms } = combos(join(d, LOG_DB_FILE));
  t.equal(batches.length, 10, 'ten batches were deleted, one rewritten');
  t.same(blooms, batches, 'a bloom per batch, none left over');
  const notices: string[] = [];
  await openSqliteLogStore(d, { onNotice: (m) => notices.push(m) }).close();
  t.same(notices, [], 'nothing to fill at the next open');
});

t.test('a rebuild of the derived tables rebuilds the blooms', async (t) => {
  const r = random(9);
  const all = records(r, 1000);
  const d = dir(t);
  const store = storeHolding(d, all);
  await store.close();
  const file = join(d, LOG_DB_FILE);
  const db = new Database(file);
  // Blooms that hold nothing, and one of no batch: a rebuild must replace them, not keep them.
  db.prepare('UPDATE log_batch_combos SET bloom = ?').run(Buffer.alloc(64));
  db.prepare('INSERT INTO log_batch_combos (batch_id, bloom) VALUES (999999, ?)').run(Buffer.alloc(64));
  db.pragma('user_version = 0');
  db.close();
  const reopened = openSqliteLogStore(d);
  await compareLists(t, r, reopened, all, 'after the rebuild', 30);
  await reopened.close();
  t.same(combos(file).blooms, combos(file).batches);
});

t.test('/api/logs with several filters answers what filtering the records gives', async (t) => {
  const r = random(31);
  // Within the hour before the test gateway's clock, so that retention keeps them; Groups are ids.
  const all = records(r, 1500).map((x) => {
    const created_at = x.created_at - BASE + Date.parse('2026-03-02T09:00:00.000Z');
    return { ...x, created_at, group_id: x.group_id === null ? null : x.group_id.slice(1), timings: { ...x.timings, started_at: created_at } };
  });
  const gw = await startGateway(t, {
    openLogStore: async (d) => {
      const store = storeHolding(d, all);
      await store.flush();
      return store;
    },
  });
  let failures = 0;
  let matched = 0;
  for (let n = 0; n < 25; n++) {
    const filter = randomFilter(r);
    delete filter.from;
    if (filter.group_id !== undefined) filter.group_id = filter.group_id.slice(1);
    const query = new URLSearchParams(Object.entries(filter).map(([k, v]): [string, string] => [k, String(v)]));
    query.set('limit', String(r.pick([3, 50, 500])));
    const got: string[] = [];
    for (let cursor: string | null = null; ; ) {
      if (cursor !== null) query.set('cursor', cursor);
      const res = await gw.api('GET', `/api/logs?${query}`);
      t.equal(res.status, 200, res.text);
      got.push(...(res.json.data.items as Array<{ request_id: string }>).map((x) => x.request_id));
      cursor = res.json.data.next_cursor as string | null;
      if (cursor === null) break;
    }
    const want = expected(all, filter);
    matched += want.length;
    if (JSON.stringify(got) !== JSON.stringify(want) && ++failures <= 3) t.fail(`/api/logs?${query}`, { got: got.length, want: want.length });
  }
  t.equal(failures, 0, `25 filtered listings through the server (${matched} records)`);
});
