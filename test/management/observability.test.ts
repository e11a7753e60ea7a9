import t from 'tap';
import { MANIFEST_DIGEST } from '../../src/generated/index.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { openWorkerLogStore } from '../../src/store/logs/index.ts';
import { logRecord } from './support/log-records.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';
import { staticServer } from './support/static-server.ts';

const HOUR = 3_600_000;

t.test('empty stores: logs, usage, home and statistics answer with nothing yet', async (t) => {
  const gw = await startGateway(t);
  t.same((await gw.api('GET', '/api/logs')).json.data, { items: [], next_cursor: null });
  t.equal((await gw.api('GET', '/api/usage')).json.data.totals.requests, 0);
  t.match((await gw.api('GET', '/api/home')).json.data, { groups: { total: 0 }, credentials: { total: 0 }, today: { requests: 0 } });
  t.same((await gw.api('GET', '/api/home/statistics')).json.data.series, []);
  t.equal((await gw.api('GET', '/api/logs/none')).status, 404);
});

t.test('logs: filters, pages and details over the log store', async (t) => {
  const logs = new MemoryLogStore();
  const gw = await startGateway(t, { logStore: logs });
  for (let i = 0; i < 5; i++) {
    logs.append(logRecord({ request_id: `r${i}`, created_at: gw.clock.now - (5 - i) * HOUR, status: i === 4 ? 502 : 200, external_model: i % 2 ? 'odd' : 'even', access_key_id: 1 }));
  }
  const page1 = await gw.api('GET', '/api/logs?limit=2');
  t.same(page1.json.data.items.map((r: { request_id: string }) => r.request_id), ['r4', 'r3']);
  t.notOk('request_body' in page1.json.data.items[0], 'list items carry no body');
  const page2 = await gw.api('GET', `/api/logs?limit=2&cursor=${page1.json.data.next_cursor}`);
  t.same(page2.json.data.items.map((r: { request_id: string }) => r.request_id), ['r2', 'r1']);
  t.same((await gw.api('GET', '/api/logs?model=odd')).json.data.items.map((r: { request_id: string }) => r.request_id), ['r3', 'r1']);
  t.same((await gw.api('GET', '/api/logs?status_class=error')).json.data.items.map((r: { request_id: string }) => r.request_id), ['r4']);
  const since = new Date(gw.clock.now - 2.5 * HOUR).toISOString();
  t.equal((await gw.api('GET', `/api/logs?from=${since}`)).json.data.items.length, 2);
  t.equal((await gw.api('GET', `/api/logs?from=${gw.clock.now - 2.5 * HOUR}`)).json.data.items.length, 2, 'epoch milliseconds');
  const offset = new Date(gw.clock.now - 2.5 * HOUR + 2 * HOUR).toISOString().slice(0, 19) + '+02:00';
  t.equal((await gw.api('GET', `/api/logs?from=${encodeURIComponent(offset)}`)).json.data.items.length, 2, 'ISO 8601 with a zone offset');
  // Date.parse would read these as dates of 2001: neither epoch milliseconds nor ISO 8601.
  for (const [name, value] of [['from', '-5'], ['from', 'March 7'], ['from', '1 2'], ['to', 'Mon, 01 Jan 1990 00:00:00 GMT'], ['to', '2026-13-01']] as const) {
    t.match((await gw.api('GET', `/api/logs?${name}=${encodeURIComponent(value)}`)).json, { code: 'VALIDATION_FAILED', data: { field: name, reason: 'invalid_value' } }, `${name}=${value}`);
    t.match((await gw.api('GET', `/api/usage?${name}=${encodeURIComponent(value)}`)).json, { code: 'VALIDATION_FAILED', data: { field: name } }, `usage ${name}=${value}`);
  }
  t.match((await gw.api('GET', '/api/logs?limit=0')).json.data, { field: 'limit', reason: 'invalid_value' });
  t.match((await gw.api('GET', '/api/logs?colour=red')).json.data, { field: 'colour', reason: 'unknown_field' });
  t.match((await gw.api('GET', '/api/logs?model=a&model=b')).json.data, { field: 'model', reason: 'repeated' });
  t.match((await gw.api('GET', '/api/logs/r4')).json.data, { request_id: 'r4', status: 502 });
});

t.test('logs: a cursor no page handed out is 400 VALIDATION_FAILED, not a log store outage, with either store', async (t) => {
  for (const [name, overrides] of [['memory', { logStore: new MemoryLogStore() }], ['worker (SQLite)', { openLogStore: (dir: string) => openWorkerLogStore(dir) }]] as const) {
    const gw = await startGateway(t, overrides);
    for (const cursor of ['garbage', Buffer.from('1234').toString('base64url'), Buffer.from('[1,2]').toString('base64url')]) {
      const res = await gw.api('GET', `/api/logs?cursor=${cursor}`);
      t.equal(res.status, 400, `${name}: ${cursor}`);
      t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'cursor', reason: 'invalid_value' } });
    }
    t.match((await gw.api('GET', '/api/health')).json.data, { stores: { logs: 'ok' } }, `${name}: the store is fine`);
    await gw.stop();
  }
});

t.test('from and to must name a date that exists: no rollover into the next day or month', async (t) => {
  const gw = await startGateway(t, { logStore: new MemoryLogStore() });
  for (const value of ['2026-02-30', '2026-04-31', '2025-02-29', '2026-03-01T24:00:00Z', '2026-03-01T10:00:00+24:00']) {
    for (const path of ['/api/logs', '/api/usage']) {
      for (const name of ['from', 'to']) {
        const res = await gw.api('GET', `${path}?${name}=${encodeURIComponent(value)}`);
        t.equal(res.status, 400, `${path} ${name}=${value}`);
        t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: name, reason: 'invalid_value' } });
      }
    }
  }
  for (const value of ['2024-02-29', '2026-03-01T23:59:59Z', '2026-03-01T01:30:00+05:30']) {
    for (const path of ['/api/logs', '/api/usage']) t.equal((await gw.api('GET', `${path}?from=${encodeURIComponent(value)}`)).status, 200, `${path} from=${value}`);
  }
});

t.test('cost sums are whole 1e-10 USD: usage totals and a key\'s quota show 0.3 for 0.1 + 0.2, not 0.30000000000000004', async (t) => {
  const logs = new MemoryLogStore();
  const gw = await startGateway(t, { logStore: logs });
  await seedGroup(gw);
  const key = await seedAccessKey(gw, { quota: { total: { cost: 1 } } });
  logs.append(logRecord({ request_id: 'a', created_at: gw.clock.now - HOUR, access_key_id: key.id, external_model: 'm1', cost: 0.1 }));
  logs.append(logRecord({ request_id: 'b', created_at: gw.clock.now - HOUR, access_key_id: key.id, external_model: 'm2', cost: 0.2 }));
  t.equal((await gw.api('GET', '/api/usage?group_by=model')).json.data.totals.cost, 0.3, 'the totals of two rows');
  t.match((await gw.api('GET', '/api/home', { token: key.value })).json.data.quota, { exceeded: false, lines: [{ metric: 'cost', used: 0.3 }] });
});

t.test('usage and home statistics', async (t) => {
  const logs = new MemoryLogStore();
  const gw = await startGateway(t, { logStore: logs });
  await seedGroup(gw);
  logs.append(logRecord({ request_id: 'a', created_at: gw.clock.now - HOUR, external_model: 'm1', cost: 0.5 }));
  logs.append(logRecord({ request_id: 'b', created_at: gw.clock.now - 2 * HOUR, external_model: 'm2', cost: 0.25, status: 500 }));
  logs.append(logRecord({ request_id: 'c', created_at: gw.clock.now - 3 * 86_400_000, external_model: 'm1', cost: 1 }));
  const usage = await gw.api('GET', '/api/usage?group_by=model&bucket=day');
  t.match(usage.json.data.totals, { requests: 3, errors: 1, cost: 1.75 });
  t.same(usage.json.data.rows.map((r: { model: string }) => r.model).sort(), ['m1', 'm1', 'm2']);
  t.match((await gw.api('GET', '/api/usage?group_by=colour')).json.data, { field: 'group_by', reason: 'invalid_value' });
  const home = (await gw.api('GET', '/api/home')).json.data;
  t.match(home, { groups: { total: 1, enabled: 1 }, credentials: { total: 0 }, access_keys: { total: 0 }, models: 1, today: { requests: 2 } });
  t.same(home.subscription_accounts, []);
  const week = (await gw.api('GET', '/api/home/statistics')).json.data;
  t.match(week, { range: '7d', totals: { requests: 3, errors: 1 } });
  const day = (await gw.api('GET', '/api/home/statistics?range=24h')).json.data;
  t.equal(day.totals.requests, 2);
  t.equal(day.series.length, 2, 'hourly buckets over a day');
});

t.test('home lists subscription accounts with their state', async (t) => {
  const gw = await startGateway(t);
  const g = (await gw.create('/api/groups', { name: 'sub', channel: 'ch10' })).json.data.id;
  await gw.create(`/api/groups/${g}/credentials/connect`, { kind: 'oauth', fields: { refresh_token: 'rt-000000000000001' } });
  t.match((await gw.api('GET', '/api/home')).json.data.subscription_accounts, [{ group_id: g, kind: 'oauth', state: 'active', reset_credits_consumed: 0 }]);
});

t.test('health: runtime health, AUTH_KEY only', async (t) => {
  const gw = await startGateway(t);
  t.match((await gw.api('GET', '/api/health')).json.data, { status: 'ok', stores: { config: 'ok', logs: 'ok' }, uptime_seconds: 0 });
  gw.clock.advance(90_000);
  t.equal((await gw.api('GET', '/api/health')).json.data.uptime_seconds, 90);
});

t.test('system: version, manifest digest and the release update check', async (t) => {
  const base = await staticServer(t, {
    '/newer.json': { body: JSON.stringify({ releases: [{ version: '0.1.0' }, { version: '0.3.1', url: 'https://releases.test/0.3.1' }, { version: '0.2.0' }] }) },
    '/same.json': { body: JSON.stringify({ tag_name: 'v0.1.0', html_url: 'https://releases.test/0.1.0' }) },
    '/down.json': { status: 500, body: '' },
  });
  const gw = await startGateway(t, { version: '0.1.0' });
  const plain = (await gw.api('GET', '/api/system')).json.data;
  t.match(plain, { name: 'switchyard', version: '0.1.0', manifest_digest: MANIFEST_DIGEST, update: { status: 'not_configured' } });
  await gw.api('PUT', '/api/settings', { body: { update_feed_url: `${base}/newer.json` } });
  t.match((await gw.api('GET', '/api/system')).json.data.update, { status: 'checked', current: '0.1.0', latest: '0.3.1', update_available: true, release_url: 'https://releases.test/0.3.1' });
  await gw.api('PUT', '/api/settings', { body: { update_feed_url: `${base}/same.json` } });
  t.match((await gw.api('GET', '/api/system')).json.data.update, { latest: '0.1.0', update_available: false });
  await gw.api('PUT', '/api/settings', { body: { update_feed_url: `${base}/down.json` } });
  const down = await gw.api('GET', '/api/system');
  t.equal(down.status, 200, 'a failing feed does not fail the endpoint');
  t.match(down.json.data.update, { status: 'unavailable', reason: 'remote_status' });
});
