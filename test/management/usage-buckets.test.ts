import t from 'tap';
import { openWorkerLogStore } from '../../src/store/logs/index.ts';
import { logRecord } from './support/log-records.ts';
import { startGateway } from './support/gateway.ts';

// docs/management-api.md, "Usage rows and statistics series": a record exactly on a bucket's
// start is in that bucket, a bucket without records is absent, the first bucket keeps its own
// start when `from` cuts it, and an offset off the hour (+05:30) moves the day's start.

const DAY = 86_400_000;
const D1 = Date.parse('2026-03-01T00:00:00.000Z');

const STORES = {
  memory: {},
  'worker (SQLite)': { openLogStore: (dir: string) => openWorkerLogStore(dir) },
};

for (const [name, overrides] of Object.entries(STORES)) t.test(`${name}: buckets through /api/usage and /api/home/statistics`, async (t) => {
  const gw = await startGateway(t, overrides);
  const at = (id: string, created_at: number, more = {}) => gw.server.logs.append(logRecord({ request_id: id, created_at, timings: { started_at: created_at, ttfb_ms: 5, duration_ms: 9 }, ...more }));
  at('last-ms-of-day-1', D1 + DAY - 1);
  at('first-ms-of-day-2', D1 + DAY, { access_key_id: null, cost: 0.2 });
  at('ist-midnight', D1 + DAY + 18.5 * 3_600_000, { external_model: 'other' });
  // Nothing on day 3.
  at('day-4', D1 + 3 * DAY + 60_000);
  const usage = async (query: string) => (await gw.api('GET', `/api/usage?${query}`)).json.data;

  const days = await usage('bucket=day');
  t.same(days.rows.map((r: { bucket_start: number; requests: number }) => [r.bucket_start, r.requests]), [[D1, 1], [D1 + DAY, 2], [D1 + 3 * DAY, 1]], 'no row for day 3; the boundary ms in day 2');
  t.same(Object.keys(days.rows[0]).sort(), ['bucket_start', 'cached_tokens', 'cost', 'errors', 'input_tokens', 'output_tokens', 'reasoning_tokens', 'requests']);

  const cut = await usage(`bucket=day&from=${D1 + DAY + 1}&group_by=key`);
  t.same(cut.rows.map((r: { bucket_start: number; access_key_id: number | null; requests: number }) => [r.bucket_start, r.access_key_id, r.requests]), [[D1 + DAY, 1, 1], [D1 + 3 * DAY, 1, 1]], 'day 2 keeps its start; the record before from is out');

  const byKey = await usage(`bucket=day&from=${D1 + DAY}&to=${D1 + 2 * DAY}&group_by=key`);
  t.same(byKey.rows.map((r: { access_key_id: number | null; requests: number }) => [r.access_key_id, r.requests]).sort(), [[1, 1], [null, 1]].sort(), 'a record without a key is a row of its own, its key null');

  const ist = await usage('bucket=day&utc_offset_minutes=330&group_by=model');
  const istDay = (d: number) => D1 + d * DAY - 5.5 * 3_600_000;
  t.same(ist.rows.map((r: { bucket_start: number; model: string; requests: number }) => [r.bucket_start, r.model, r.requests]), [[istDay(1), 'chat-model', 2], [istDay(2), 'other', 1], [istDay(3), 'chat-model', 1]], 'local days start at 18:30 UTC');
  t.equal(days.totals.cost, 0.203, 'totals');

  gw.clock.now = D1 + 5 * DAY;
  const statistics = (await gw.api('GET', '/api/home/statistics?range=7d')).json.data;
  t.same(statistics.series, (await usage(`bucket=day&from=${statistics.from}&to=${statistics.to}`)).rows, 'series are the usage rows of the range');
  t.same([statistics.totals.requests, statistics.totals.cost], [4, 0.203]);
});
