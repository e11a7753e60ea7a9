import t from 'tap';
import { QuotaMeter } from '../../src/dataplane/quota-meter.ts';
import { quotaStatus } from '../../src/management/quota.ts';
import { openLogStore, tokenRecord as log } from './helpers/key-usage-stores.ts';
import { logRecord } from '../management/support/log-records.ts';
import type { AccessKeyQuota, AccessKeyRecord } from '../../src/store/records.ts';
import { reachedLine } from './helpers/quota-reached.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 5, 10, 10, 30, 0);

/** Ids of the records this file makes with other fields than tokenRecord's. */
let seq = 0;

const key = (id: number, quota: AccessKeyQuota): AccessKeyRecord => ({ id, quota }) as AccessKeyRecord;

t.test('usage logged before the first check counts; later requests advance it without a query', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  for (let i = 0; i < 3; i++) logs.append(log(1, T0 - 10 * HOUR, 10));
  logs.append(log(2, T0, 1000));
  const meter = new QuotaMeter(logs);
  const k = key(1, { total: { requests: 5, tokens: 45 } });
  t.equal(await reachedLine(meter, k, T0), undefined, '3 requests, 30 tokens: within both limits');
  const appended = log(1, T0, 10);
  logs.append(appended);
  meter.record(appended);
  t.equal(await reachedLine(meter, k, T0), undefined, '4 requests, 40 tokens');
  const last = log(1, T0, 10);
  logs.append(last);
  meter.record(last);
  t.match(await reachedLine(meter, k, T0), { scope: 'total', metric: 'requests', limit: 5, used: 5 });
  const status = await quotaStatus(k, logs, T0);
  t.match(status?.lines, [{ metric: 'requests', used: 5 }, { metric: 'tokens', used: 50 }], 'the meter agrees with the store');
});

t.test('a new period starts from nothing; the lifetime total keeps counting', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const meter = new QuotaMeter(logs);
  const k = key(3, { total: { requests: 100 }, per_period: { period: 'hour', requests: 2 } });
  await reachedLine(meter, k, T0);
  for (const at of [T0, T0 + 1000]) {
    const r = log(3, at, 1);
    logs.append(r);
    meter.record(r);
  }
  t.match(await reachedLine(meter, k, T0 + 2000), { scope: 'per_period', period: 'hour', used: 2 });
  const nextHour = T0 + HOUR;
  t.equal(await reachedLine(meter, k, nextHour), undefined, 'the next hour is open again');
  const r = log(3, nextHour, 1);
  logs.append(r);
  meter.record(r);
  t.equal(await reachedLine(meter, k, nextHour), undefined, 'one request this hour');
  const again = log(3, nextHour + 1, 1);
  logs.append(again);
  meter.record(again);
  t.match(await reachedLine(meter, k, nextHour + 2), { scope: 'per_period', used: 2 });
  t.match((await quotaStatus(k, logs, nextHour + 2))?.lines, [{ scope: 'total', used: 4 }, { scope: 'per_period', used: 2 }]);
});

t.test('a record that opens a later period before any check moves the period itself', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const meter = new QuotaMeter(logs);
  const k = key(4, { per_period: { period: 'day', tokens: 25 } });
  await reachedLine(meter, k, T0);
  const today = log(4, T0, 20);
  const tomorrow = log(4, T0 + 24 * HOUR, 20);
  for (const r of [today, tomorrow]) {
    logs.append(r);
    meter.record(r);
  }
  t.equal(await reachedLine(meter, k, T0 + 24 * HOUR), undefined, 'only tomorrow\'s 20 tokens count tomorrow');
});

t.test('records appended while the totals load are counted once; an edited quota reloads', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  logs.append(log(5, T0, 5));
  const meter = new QuotaMeter(logs);
  const k = key(5, { total: { tokens: 12 } });
  const pending = reachedLine(meter, k, T0);
  const during = log(5, T0, 5);
  logs.append(during);
  meter.record(during);
  t.equal(await pending, undefined, '10 tokens');
  const more = log(5, T0, 5);
  logs.append(more);
  meter.record(more);
  t.match(await reachedLine(meter, k, T0), { metric: 'tokens', used: 15 });
  t.equal(await reachedLine(meter, key(5, { total: { tokens: 100 } }), T0), undefined, 'a raised limit is read afresh');
  t.match(await reachedLine(meter, key(5, { total: { tokens: 15 } }), T0), { used: 15 }, 'and the reload sees every record');
});

t.test('a request the gateway refused itself (no upstream attempt) does not count as a request', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const refused = logRecord({ request_id: `q_${++seq}`, access_key_id: 7, created_at: T0, status: 429, error_code: 'quota_exceeded', attempt_count: 0, attempts: [] });
  logs.append(log(7, T0, 10));
  logs.append(refused);
  const k = key(7, { total: { requests: 2 }, per_period: { period: 'day', requests: 2 } });
  const meter = new QuotaMeter(logs);
  t.equal(await reachedLine(meter, k, T0), undefined, 'one forwarded request of two');
  meter.record(refused);
  t.equal(await reachedLine(meter, k, T0), undefined, 'still one after the meter saw the refusal');
  t.match((await quotaStatus(k, logs, T0))?.lines, [{ scope: 'total', used: 1 }, { scope: 'per_period', used: 1 }], 'the store agrees');
});

t.test('admitted requests hold their place toward a requests limit until their records arrive', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const meter = new QuotaMeter(logs);
  const k = key(8, { total: { requests: 2 }, per_period: { period: 'day', requests: 5 } });
  const forwarded = log(8, T0, 1);
  const refusedLater = logRecord({ request_id: `q_${++seq}`, access_key_id: 8, created_at: T0, status: 400, error_code: 'model_missing', attempt_count: 0, attempts: [] });
  await meter.enforce(k, T0, forwarded);
  await meter.enforce(k, T0, refusedLater);
  await t.rejects(meter.enforce(k, T0, log(8, T0, 1)), { code: 'quota_exceeded', message: /Total requests limit 2/ }, 'two in flight fill a limit of two');
  t.match(await reachedLine(meter, k, T0), { scope: 'total', metric: 'requests', used: 2 });
  meter.record(refusedLater);
  const next = log(8, T0, 1);
  await meter.enforce(k, T0, next);
  t.pass('a request the gateway refused itself gives its place back');
  logs.append(forwarded);
  meter.record(forwarded);
  await t.rejects(meter.enforce(k, T0, log(8, T0, 1)), { code: 'quota_exceeded' }, 'one forwarded and one in flight');
  meter.record(next);
  t.match(await reachedLine(meter, k, T0), { metric: 'requests', used: 2 }, 'two forwarded, none in flight');
});

for (const kind of ['sqlite', 'worker', 'memory'] as const) {
  t.test(`${kind}: records deleted by retention still count toward the total quota, not toward the period`, async (t) => {
    const logs = await openLogStore(t, kind);
    for (let i = 0; i < 3; i++) logs.append(log(3, T0 - 40 * 24 * HOUR, 10));
    logs.append(log(4, T0 - 40 * 24 * HOUR, 5));
    logs.append(log(3, T0, 10));
    t.equal(await logs.prune(T0 - 30 * 24 * HOUR), 4);
    t.same(await logs.keyUsage(3), { requests: 4, tokens: 40, cost: 0 }, 'lifetime: three pruned records and one kept');
    t.same(await logs.keyUsage(3, T0 - HOUR), { requests: 1, tokens: 10, cost: 0 }, 'a period after the pruned records covers only kept ones');
    t.same(await logs.keyUsage(4), { requests: 1, tokens: 5, cost: 0 }, 'per key');
    t.equal(await logs.prune(T0 - 30 * 24 * HOUR), 0);
    t.same(await logs.keyUsage(3), { requests: 4, tokens: 40, cost: 0 }, 'a second prune adds nothing');
    const k = key(3, { total: { requests: 4 } });
    t.match(await reachedLine(new QuotaMeter(logs), k, T0), { scope: 'total', metric: 'requests', used: 4 }, 'the meter loads the lifetime total');
  });
}

for (const kind of ['sqlite', 'worker', 'memory'] as const) {
  t.test(`${kind}: records retention deleted inside the current period still count toward it`, async (t) => {
    const logs = await openLogStore(t, kind);
    const monthStart = Date.UTC(2026, 4, 1);
    const lastMonth = monthStart - 2 * HOUR;
    const firstDay = monthStart + 90 * 60_000;
    const lastDay = Date.UTC(2026, 4, 31, 12);
    logs.append(log(5, lastMonth, 100));
    logs.append(log(5, firstDay, 10));
    logs.append(log(5, firstDay + 60_000, 10));
    logs.append(log(5, lastDay, 10));
    // A 30-day retention on the 31st deletes the 1st of the same month.
    t.equal(await logs.prune(lastDay - 30 * 24 * HOUR), 3);
    t.same(await logs.keyUsage(5, monthStart), { requests: 3, tokens: 30, cost: 0 }, 'the month: the two pruned records of the 1st and the kept one');
    t.same(await logs.keyUsage(5), { requests: 4, tokens: 130, cost: 0 }, 'lifetime');
    const k = key(5, { per_period: { period: 'month', requests: 3 } });
    t.match(await reachedLine(new QuotaMeter(logs), k, lastDay), { scope: 'per_period', period: 'month', used: 3 }, 'the monthly quota is reached');
    t.match((await quotaStatus(k, logs, lastDay))?.lines, [{ scope: 'per_period', used: 3 }]);
  });
}

for (const kind of ['sqlite', 'worker', 'memory'] as const) {
  t.test(`${kind}: ten costs of 0.1 read back as 1, so a cost limit of 1 is reached`, async (t) => {
    const logs = await openLogStore(t, kind);
    for (let i = 0; i < 10; i++) logs.append(logRecord({ request_id: `q_${++seq}`, access_key_id: 9, created_at: T0 + i, cost: 0.1 }));
    // The memory store is a test double that sums as it goes; the SQLite stores round their sums.
    if (kind !== 'memory') t.equal((await logs.keyUsage(9)).cost, 1, 'the store sums to 1');
    const k = key(9, { total: { cost: 1 }, per_period: { period: 'day', cost: 1 } });
    t.match(await reachedLine(new QuotaMeter(logs), k, T0 + 10), { scope: 'total', metric: 'cost', used: 1 }, 'the meter loads 1 and the limit is reached');
    t.same((await quotaStatus(k, logs, T0 + 10))?.lines.map((l) => l.used), [1, 1], 'the status shows 1, lifetime and today');
  });
}

t.test('costs recorded one by one sum to what they add up to, for the limit and a running session', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const meter = new QuotaMeter(logs);
  const k = key(10, { total: { cost: 1 } });
  t.equal(await reachedLine(meter, k, T0), undefined);
  for (let i = 0; i < 9; i++) {
    const r = logRecord({ request_id: `q_${++seq}`, access_key_id: 10, created_at: T0, cost: 0.1 });
    logs.append(r);
    meter.record(r);
  }
  t.equal(await reachedLine(meter, k, T0), undefined, '0.9 of 1');
  const tenth = logRecord({ request_id: `q_${++seq}`, access_key_id: 10, created_at: T0, cost: 0.1 });
  logs.append(tenth);
  meter.record(tenth);
  t.match(await reachedLine(meter, k, T0), { metric: 'cost', used: 1 });
  // 0.2 + 0.1 is 0.30000000000000004 in floats: past a limit of 0.3 unless rounded.
  const two = key(13, { per_period: { period: 'day', cost: 0.3 } });
  await reachedLine(meter, two, T0);
  for (let i = 0; i < 2; i++) meter.record(logRecord({ request_id: `q_${++seq}`, access_key_id: 13, created_at: T0, cost: 0.1 }));
  t.equal(meter.sessionOver(two, T0, T0, 0, 0.1), undefined, 'a session using 0.1 more reaches 0.3 but does not go past it');
  t.match(meter.sessionOver(two, T0, T0, 0, 0.1000000001), { metric: 'cost', limit: 0.3 }, 'a little more goes past it');
  meter.record(logRecord({ request_id: `q_${++seq}`, access_key_id: 13, created_at: T0, cost: 0.1 }));
  t.match(await reachedLine(meter, two, T0), { scope: 'per_period', metric: 'cost', used: 0.3 }, 'the period sums to 0.3');
});

t.test('a quota edited while requests are in flight: they keep their places in the rebuilt meter and give them back once', async (t) => {
  const logs = await openLogStore(t, 'sqlite');
  const meter = new QuotaMeter(logs);
  const first = log(11, T0, 1);
  await meter.enforce(key(11, { total: { requests: 1 } }), T0, first);
  const edited = key(11, { total: { requests: 1, tokens: 1000 } });
  await t.rejects(meter.enforce(edited, T0, log(11, T0, 1)), { code: 'quota_exceeded' }, 'the place stays taken after the edit');
  t.match(await reachedLine(meter, edited, T0), { metric: 'requests', used: 1 });
  logs.append(first);
  meter.record(first);
  t.equal(await reachedLine(meter, key(11, { total: { requests: 2 } }), T0), undefined, 'its record counts it and its place is free: 1 of 2');
  t.match(await reachedLine(meter, key(11, { total: { requests: 1 } }), T0), { metric: 'requests', used: 1 }, 'given back once, not twice: 1 of 1');
});

t.test('a quota that sets no limit reads nothing and refuses nothing', async (t) => {
  const failing = { keyUsage: () => Promise.reject(new Error('store down')) } as unknown as ConstructorParameters<typeof QuotaMeter>[0];
  const meter = new QuotaMeter(failing);
  for (const quota of [{ total: {} }, { per_period: { period: 'day' } }, {}] as AccessKeyQuota[]) {
    await meter.enforce(key(12, quota), T0, log(12, T0, 1));
    t.equal(await reachedLine(meter, key(12, quota), T0), undefined, JSON.stringify(quota));
  }
  await t.rejects(meter.enforce(key(12, { total: { requests: 5 } }), T0, log(12, T0, 1)), { code: 'log_store_unavailable' }, 'a limit does read');
});
