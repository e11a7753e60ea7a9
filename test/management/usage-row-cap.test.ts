import t from 'tap';
import { MAX_USAGE_ROWS } from '../../src/management/routes/usage.ts';
import { openSqliteLogStore, openWorkerLogStore } from '../../src/store/logs/index.ts';
import type { LogStore } from '../../src/store/logs/log-store.ts';
import { logRecord } from './support/log-records.ts';
import { startGateway, tempDataDir } from './support/gateway.ts';

// docs/management-api.md, /api/usage: an answer of more than MAX_USAGE_ROWS rows is refused
// with 400 too_many_rows, and the store stops collecting one row past the cap, rather than
// building every row of range × bucket × group_by first.

const HOUR = Date.parse('2026-03-02T09:00:00.000Z');

/** `count` records in one hour, each of its own model: one row each when grouped by model. */
async function appendModels(logs: LogStore & { flush(): Promise<void> }, count: number, prefix = 'm'): Promise<void> {
  for (let i = 0; i < count; i++) {
    logs.append(logRecord({ request_id: `${prefix}-${i}`, external_model: `${prefix}-${String(i).padStart(6, '0')}`, created_at: HOUR + (i % 3_600_000) }));
    if (i % 1000 === 999) await logs.flush();
  }
  await logs.flush();
}

const STORES = {
  memory: {},
  'worker (SQLite)': { openLogStore: (dir: string) => openWorkerLogStore(dir) },
};

for (const [name, overrides] of Object.entries(STORES)) t.test(`${name}: more rows than the cap is 400 too_many_rows; the cap itself is answered in full`, async (t) => {
  const gw = await startGateway(t, overrides);
  await appendModels(gw.server.logs, MAX_USAGE_ROWS);
  const at = await gw.api('GET', '/api/usage?group_by=model&bucket=hour');
  t.equal(at.status, 200, 'exactly the cap');
  t.equal(at.json.data.rows.length, MAX_USAGE_ROWS);
  t.equal(at.json.data.totals.requests, MAX_USAGE_ROWS);

  await appendModels(gw.server.logs, 1, 'extra');
  const over = await gw.api('GET', '/api/usage?group_by=model&bucket=hour');
  t.equal(over.status, 400, 'one row past the cap');
  t.match(over.json, { code: 'VALIDATION_FAILED', data: { field: 'from', reason: 'too_many_rows', max_rows: MAX_USAGE_ROWS, detail: /narrow from\/to.*bucket.*group_by/ } });

  const coarser = await gw.api('GET', '/api/usage?bucket=hour');
  t.equal(coarser.status, 200, 'without group_by the same records are one row');
  t.same(coarser.json.data.rows.map((r: { requests: number }) => r.requests), [MAX_USAGE_ROWS + 1]);
});

t.test('the store stops one row past max_rows, from the rollups and from the records of a cut minute', async (t) => {
  const logs = openSqliteLogStore(tempDataDir(t));
  t.teardown(() => logs.close());
  await appendModels(logs, 10);
  const query = { bucket: 'hour', group_by: ['model'] } as const;
  t.equal((await logs.usage({ ...query, group_by: ['model'] })).length, 10, 'no cap: every row');
  t.equal((await logs.usage({ ...query, group_by: ['model'], max_rows: 3 })).length, 4, 'rollups: max_rows + 1');
  t.equal((await logs.usage({ ...query, group_by: ['model'], max_rows: 10 })).length, 10, 'at the cap: every row');
  // A `to` inside the first minute: every record is read from its batch, not from the rollups.
  const cut = { ...query, group_by: ['model' as const], to: HOUR + 30_000 };
  t.equal((await logs.usage(cut)).length, 10, 'cut minute, no cap: every row');
  t.equal((await logs.usage({ ...cut, max_rows: 3 })).length, 4, 'cut minute: max_rows + 1');
});
