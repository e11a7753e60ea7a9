import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openSqliteLogStore, openWorkerLogStore, type LogRecord, type LogStore } from '../../src/store/logs/index.ts';
import { DIM_ERROR_CODE } from '../../src/store/logs/log-schema.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// What counts as an error (src/store/logs/error-record.ts): a status of 400 or more, or an
// answer that began and then failed (an error code on a status below 400), unless the client
// ended it. Usage, statistics and `status_class=error` all count the same records, whether
// read from the per-minute rollups or from the records of a cut minute; and a file whose
// rollups were summed under the former definition (status >= 400 alone) is rebuilt on open.

const MINUTE = 60_000;
/** On a minute, so that [T0, T0 + 10 min) is whole minutes (rollups) and T0 + 30 s cuts one (records). */
const T0 = Date.UTC(2026, 2, 2, 9, 0, 0);

/** status, error_code, whether it is an error. */
const CASES: ReadonlyArray<[number, string | null, boolean]> = [
  [200, null, false],
  [200, 'upstream_stream_broken', true],
  [200, 'upstream_idle_timeout', true],
  [200, 'upstream_stream_error', true],
  [200, 'shutting_down', true],
  [200, 'client_closed', false],
  [200, 'client_stalled', false],
  [101, 'quota_exceeded', true],
  [499, 'client_closed', true],
  [502, 'upstream_502', true],
  [429, 'quota_exceeded', true],
];
const ERRORS = CASES.filter(([, , error]) => error).length;

function record(i: number, status: number, error_code: string | null): LogRecord {
  const created_at = T0 + i * 1000;
  return {
    request_id: `req_${String(i).padStart(4, '0')}`,
    created_at,
    access_key_id: 1,
    group_id: 'g-a',
    channel: 'ch02',
    credential_id: 'cred-1',
    protocol: 'x-completions',
    operation: 'chat_completions',
    route_mode: 'N',
    effective: 'native',
    external_model: 'm',
    upstream_model: 'm',
    status,
    error_code,
    attempt_count: 1,
    attempts: [{ credential_id: 'cred-1', group_id: 'g-a', status, error_code }],
    client_aborted: error_code === 'client_closed',
    timings: { started_at: created_at - 10, ttfb_ms: 5, duration_ms: 10 },
    usage: { input_tokens: 1, output_tokens: 1, cached_tokens: 0, reasoning_tokens: 0 },
    cost: 0,
    currency: 'USD',
  };
}

function appendCases(store: LogStore): void {
  CASES.forEach(([status, code], i) => store.append(record(i, status, code)));
}

const errorIds = CASES.flatMap(([, , error], i) => (error ? [record(i, 200, null).request_id] : [])).sort();

async function checkCounts(t: Test, store: LogStore): Promise<void> {
  // Whole minutes only (rollups), and a range that cuts the first minute (records); the
  // record at T0, which the second leaves out, is no error.
  for (const [label, from, twoHundreds] of [['rollups', T0, 7], ['records of a cut minute', T0 + 1, 6]] as const) {
    const range = { from, to: T0 + 10 * MINUTE };
    const usage = await store.usage({ ...range, bucket: 'day', group_by: [] });
    t.equal(usage[0]?.errors, ERRORS, `usage errors, ${label}`);
    const stats = await store.statistics(range);
    t.equal(stats.errors, ERRORS, `statistics errors, ${label}`);
    t.equal(stats.error_rate, ERRORS / stats.requests, `error_rate, ${label}`);
    t.same(stats.by_status_class, { '1xx': 1, '2xx': twoHundreds, '3xx': 0, '4xx': 2, '5xx': 1 }, `by_status_class stays by HTTP status, ${label}`);
  }
  const listed = await store.list({ status_class: 'error' }, { limit: 100 });
  t.same(listed.items.map((r) => r.request_id).sort(), errorIds, 'status_class=error lists the records errors counts');
}

for (const [name, open] of [['SqliteLogStore', openSqliteLogStore], ['WorkerLogStore', openWorkerLogStore]] as const) {
  t.test(`${name}: an answer that failed after it began is an error, one the client ended is not`, async (t) => {
    const store = await open(tempDataDir(t));
    t.teardown(() => store.close());
    appendCases(store);
    await checkCounts(t, store);
    const broken = await store.list({ error_code: 'upstream_stream_broken' }, { limit: 100 });
    t.same(broken.items.map((r) => [r.status, r.error_code]), [[200, 'upstream_stream_broken']], 'error_code is an exact match');
    const closed = await store.list({ error_code: 'client_closed', status_class: 'error' }, { limit: 100 });
    t.same(closed.items.map((r) => r.status), [499], 'with status_class=error, client_closed is only the one refused before its answer');
    t.same((await store.list({ error_code: 'upstream' }, { limit: 100 })).items, [], 'not a prefix');
  });
}

t.test('a file whose rollups counted only status >= 400 is rebuilt when opened', async (t) => {
  const dir = tempDataDir(t);
  const first = openSqliteLogStore(dir);
  appendCases(first);
  await first.close();
  // The state the former definition left: errors counted by status alone, no error-code
  // dimensions, and no user_version.
  const db = new Database(join(dir, LOG_DB_FILE));
  db.exec('UPDATE usage_rollup SET errors = s4xx + s5xx');
  db.prepare('DELETE FROM log_batch_dims WHERE kind = ?').run(DIM_ERROR_CODE);
  db.pragma('user_version = 0');
  t.equal((db.prepare('SELECT SUM(errors) FROM usage_rollup').pluck().get() as number), 3, 'the old state has its old count');
  db.close();
  const store = openSqliteLogStore(dir);
  t.teardown(() => store.close());
  await checkCounts(t, store);
  t.same((await store.list({ error_code: 'upstream_idle_timeout' }, { limit: 100 })).items.map((r) => r.request_id), ['req_0002'], 'batches are found by error code');
});
