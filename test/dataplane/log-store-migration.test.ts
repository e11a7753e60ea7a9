import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openSqliteLogStore, type LogRecord, type LogStore } from '../../src/store/logs/index.ts';
import { LOG_SCHEMA } from '../../src/store/logs/log-schema.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';

// A logs.sqlite from before batches (a request_logs row per record, in this schema) is moved
// into batches when a store opens it.

const OLD_LOG_SCHEMA = `
CREATE TABLE request_logs (
  seq INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  access_key_id INTEGER,
  group_id TEXT,
  channel TEXT,
  credential_id TEXT,
  protocol TEXT NOT NULL,
  operation TEXT NOT NULL,
  route_mode TEXT,
  effective TEXT,
  external_model TEXT,
  upstream_model TEXT,
  status INTEGER NOT NULL,
  error_code TEXT,
  attempt_count INTEGER NOT NULL,
  attempts TEXT NOT NULL,
  client_aborted INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ttfb_ms INTEGER,
  duration_ms INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  currency TEXT NOT NULL
);
CREATE INDEX request_logs_time ON request_logs (created_at, seq);
CREATE INDEX request_logs_key_time ON request_logs (access_key_id, created_at, seq);
CREATE INDEX request_logs_group_time ON request_logs (group_id, created_at, seq);
CREATE INDEX request_logs_model_time ON request_logs (external_model, created_at, seq);
CREATE INDEX request_logs_status_time ON request_logs (status, created_at, seq);
CREATE TABLE pruned_usage_by_hour (
  access_key_id INTEGER NOT NULL,
  hour_start INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  PRIMARY KEY (access_key_id, hour_start)
) WITHOUT ROWID;
CREATE TABLE request_bodies (
  request_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  original_bytes INTEGER NOT NULL,
  body TEXT NOT NULL,
  is_json INTEGER NOT NULL
) WITHOUT ROWID;
`;

const T0 = Date.UTC(2025, 5, 1, 8, 0, 0);
const HOUR = 3_600_000;
const N = 2600;
/** The first rows, deleted by an earlier retention: the table's seqs start after them. */
const PRUNED_EARLIER = 100;
/** What that retention kept for quotas, as the former store wrote it. */
const PRUNED_USAGE = { access_key_id: 1, hour_start: T0 - HOUR, requests: 40, tokens: 4000, cost: 0.5 };

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-migration-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Record i; records share their created_at three by three, and ids grow with i (MemoryLogStore orders ties by id). */
function record(i: number): LogRecord {
  const created_at = T0 + Math.floor(i / 3) * 7_001;
  const r: LogRecord = {
    request_id: `old_${String(i).padStart(6, '0')}`,
    created_at,
    access_key_id: i % 4 === 3 ? null : 1 + (i % 3),
    group_id: i % 5 === 0 ? null : `g${i % 2}`,
    channel: 'ch02',
    credential_id: `c${i % 3}`,
    protocol: 'x-completions',
    operation: 'chat-completions',
    route_mode: i % 2 === 0 ? 'N' : 'C',
    effective: i % 2 === 0 ? 'native' : 'converted',
    external_model: i % 7 === 0 ? null : `m${i % 3}`,
    upstream_model: 'up',
    status: [200, 200, 429, 502, 201][i % 5]!,
    error_code: i % 5 === 2 ? 'upstream_rate_limited' : null,
    attempt_count: i % 6 === 0 ? 0 : 1,
    attempts: i % 6 === 0 ? [] : [{ credential_id: `c${i % 3}`, group_id: 'g0', status: i % 4 === 0 ? null : 200, error_code: null }],
    client_aborted: i % 11 === 0,
    timings: { started_at: created_at - 5, ttfb_ms: i % 8 === 0 ? null : i % 300, duration_ms: i % 1000 },
    usage: { input_tokens: i, output_tokens: i % 17, cached_tokens: i % 5, reasoning_tokens: i % 3 },
    cost: (i % 13) * 0.000123,
    currency: 'USD',
  };
  if (i % 10 === 1) r.request_body = i % 20 === 1 ? { state: 'recorded', original_bytes: 30, body: { i, text: 'é' } } : { state: 'truncated', original_bytes: 9_999, body: `text ${i}` };
  return r;
}

/** A logs.sqlite as the former store left it: rows 0..N-1 with seqs 1..N, the first ones pruned, and an orphan body. */
function writeOldFile(dir: string, autoincrement: boolean): void {
  const db = new Database(join(dir, LOG_DB_FILE));
  db.exec(autoincrement ? OLD_LOG_SCHEMA.replace('seq INTEGER PRIMARY KEY,', 'seq INTEGER PRIMARY KEY AUTOINCREMENT,') : OLD_LOG_SCHEMA);
  const columns = [
    'request_id', 'created_at', 'access_key_id', 'group_id', 'channel', 'credential_id', 'protocol', 'operation', 'route_mode', 'effective', 'external_model',
    'upstream_model', 'status', 'error_code', 'attempt_count', 'attempts', 'client_aborted', 'started_at', 'ttfb_ms', 'duration_ms', 'input_tokens',
    'output_tokens', 'cached_tokens', 'reasoning_tokens', 'cost', 'currency',
  ];
  const insert = db.prepare(`INSERT INTO request_logs (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
  const insertBody = db.prepare('INSERT INTO request_bodies (request_id, state, original_bytes, body, is_json) VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < N; i++) {
      const r = record(i);
      insert.run(
        r.request_id, r.created_at, r.access_key_id, r.group_id, r.channel, r.credential_id, r.protocol, r.operation, r.route_mode, r.effective, r.external_model,
        r.upstream_model, r.status, r.error_code, r.attempt_count, JSON.stringify(r.attempts), r.client_aborted ? 1 : 0, r.timings.started_at, r.timings.ttfb_ms,
        r.timings.duration_ms, r.usage.input_tokens, r.usage.output_tokens, r.usage.cached_tokens, r.usage.reasoning_tokens, r.cost, r.currency,
      );
      const body = r.request_body;
      if (body !== undefined) insertBody.run(r.request_id, body.state, body.original_bytes, typeof body.body === 'string' ? body.body : JSON.stringify(body.body), typeof body.body === 'string' ? 0 : 1);
    }
    db.prepare('DELETE FROM request_bodies WHERE request_id IN (SELECT request_id FROM request_logs WHERE seq <= ?)').run(PRUNED_EARLIER);
    db.prepare('DELETE FROM request_logs WHERE seq <= ?').run(PRUNED_EARLIER);
    insertBody.run('orphan', 'recorded', 2, '{}', 1);
    db.prepare('INSERT INTO pruned_usage_by_hour VALUES (?, ?, ?, ?, ?)').run(...Object.values(PRUNED_USAGE));
  })();
  db.close();
}

/** The records the old file holds, in a MemoryLogStore. */
function reference(): MemoryLogStore {
  const memory = new MemoryLogStore();
  for (let i = PRUNED_EARLIER; i < N; i++) memory.append(record(i));
  return memory;
}

async function listAll(store: LogStore, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({}, cursor === undefined ? { limit } : { limit, cursor });
    ids.push(...page.items.map((r) => r.request_id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return ids;
}

/** Numbers to 12 significant digits (float sums added in another order). */
const rounded = <T>(value: T): T => JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' ? Number(v.toPrecision(12)) : v))) as T;

function openFile(t: Test, dir: string): Database.Database {
  const db = new Database(join(dir, LOG_DB_FILE), { fileMustExist: true });
  t.teardown(() => db.close());
  return db;
}

for (const autoincrement of [false, true]) {
  t.test(`a logs.sqlite with request_logs (seq ${autoincrement ? 'AUTOINCREMENT' : 'a plain rowid'}) is moved into batches on open`, async (t) => {
    const dir = tempDir(t);
    writeOldFile(dir, autoincrement);
    const store = openSqliteLogStore(dir);
    const memory = reference();

    t.same(await listAll(store, 500), await listAll(memory, 500), 'the list, ties on created_at in the old seq order');
    t.same(await listAll(store, 7), await listAll(memory, 7), 'and in pages');
    for (const i of [PRUNED_EARLIER, PRUNED_EARLIER + 1, 1001, 1024 + PRUNED_EARLIER, N - 1]) t.same(await store.get(record(i).request_id), record(i), `record ${i}, body and all`);
    t.equal(await store.get(record(0).request_id), undefined, 'a record pruned before the migration');
    t.same(rounded(await store.statistics({ top: 10 })), rounded(await memory.statistics({ top: 10 })), 'statistics');
    // MemoryLogStore orders rows by bucket only: both are put in one order.
    const usage = async (s: LogStore) =>
      rounded(await s.usage({ bucket: 'hour', group_by: ['key', 'model'] })).sort((a, b) => a.bucket_start - b.bucket_start || JSON.stringify([a.access_key_id, a.model]).localeCompare(JSON.stringify([b.access_key_id, b.model])));
    t.same(await usage(store), await usage(memory), 'usage');
    const fromMemory = await memory.keyUsage(1);
    t.same(
      rounded(await store.keyUsage(1)),
      rounded({ requests: fromMemory.requests + PRUNED_USAGE.requests, tokens: fromMemory.tokens + PRUNED_USAGE.tokens, cost: fromMemory.cost + PRUNED_USAGE.cost }),
      'quota usage, what the former store had pruned included',
    );

    // A record appended now with the newest old record's created_at comes after it.
    const newest = record(N - 1);
    store.append({ ...newest, request_id: 'new' });
    t.same((await store.list({}, { limit: 2 })).items.map((r) => r.request_id), ['new', newest.request_id], 'new records take seqs after the old ones');
    await store.close();

    const db = openFile(t, dir);
    t.same(db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'request_logs%'").all(), [], 'the old table and its indexes are gone');
    if (autoincrement) t.same(db.prepare("SELECT name FROM sqlite_sequence WHERE name = 'request_logs'").all(), [], 'and its AUTOINCREMENT counter');
    t.same(db.prepare('SELECT SUM(count) AS n FROM log_batches').get(), { n: N - PRUNED_EARLIER + 1 });
    t.same(db.prepare('SELECT COUNT(*) AS n FROM request_bodies WHERE batch_id IS NULL').get(), { n: 0 }, 'every body belongs to a batch; the orphan is gone');
  });
}

t.test('a migration cut off part way goes on at the next open, losing and duplicating nothing', async (t) => {
  const dir = tempDir(t);
  writeOldFile(dir, false);
  const db = new Database(join(dir, LOG_DB_FILE));
  // The new tables, as a first open creates them, with a trigger that fails the second batch's insert.
  db.exec('ALTER TABLE request_bodies ADD COLUMN batch_id INTEGER');
  db.exec(LOG_SCHEMA);
  db.exec("CREATE TRIGGER cut_off BEFORE INSERT ON log_batches WHEN (SELECT COUNT(*) FROM log_batches) >= 1 BEGIN SELECT RAISE(ABORT, 'cut off by the test'); END");
  db.close();
  t.throws(() => openSqliteLogStore(dir), /cut off by the test/);

  const check = new Database(join(dir, LOG_DB_FILE));
  t.same(check.prepare('SELECT SUM(count) AS n FROM log_batches').get(), { n: 1024 }, 'the first chunk is in a batch');
  t.same(check.prepare('SELECT COUNT(*) AS n FROM request_logs').get(), { n: N - PRUNED_EARLIER - 1024 }, 'and no longer in request_logs');
  check.exec('DROP TRIGGER cut_off');
  check.close();

  const store = openSqliteLogStore(dir);
  t.teardown(() => store.close());
  const memory = reference();
  const ids = await listAll(store, 500);
  t.equal(new Set(ids).size, ids.length, 'no record twice');
  t.same(ids, await listAll(memory, 500), 'every record once');
  t.same(rounded(await store.statistics({})), rounded(await memory.statistics({})), 'statistics count each record once');
});
