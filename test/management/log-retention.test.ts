import t from 'tap';
import type { ServerOptions } from '../../src/server/create-server.ts';
import { openWorkerLogStore } from '../../src/store/logs/index.ts';
import { eventually } from '../dataplane/helpers/dataplane-scenarios.ts';
import { startGateway, type Gateway } from './support/gateway.ts';
import { logRecord } from './support/log-records.ts';

// The server deletes request logs older than `log_retention_days`: at start, then on its
// schedule (hourly by default; here a schedule the test runs by hand), against the injected
// clock and the setting as it is at each run.

const DAY_MS = 86_400_000;

const STORES: Array<{ name: string; options: Partial<ServerOptions> }> = [
  { name: 'MemoryLogStore', options: {} },
  { name: 'WorkerLogStore', options: { openLogStore: (dir) => openWorkerLogStore(dir) } },
];

/** A schedule that only records what to call, for the test to run retention when it chooses. */
function manualSchedule() {
  const schedule = { run: undefined as (() => Promise<void>) | undefined, stopped: false };
  const option: ServerOptions['logRetentionSchedule'] = (prune) => {
    schedule.run = prune;
    return () => {
      schedule.stopped = true;
    };
  };
  return { schedule, option };
}

async function status(gw: Gateway, requestId: string): Promise<number> {
  return (await gw.api('GET', `/api/logs/${requestId}`)).status;
}

for (const { name, options } of STORES) {
  t.test(`${name}: a record older than log_retention_days is deleted when retention runs, with the setting of that run`, async (t) => {
    const { schedule, option } = manualSchedule();
    const gw = await startGateway(t, { ...options, logRetentionSchedule: option });
    gw.server.logs.append(logRecord({ request_id: 'early', created_at: gw.clock.now }));
    gw.clock.advance(31 * DAY_MS);
    gw.server.logs.append(logRecord({ request_id: 'recent', created_at: gw.clock.now }));

    t.equal((await gw.api('PUT', '/api/settings', { body: { log_retention_days: 60 } })).status, 200);
    await schedule.run!();
    t.equal(await status(gw, 'early'), 200, 'kept while the retention is 60 days');

    t.equal((await gw.api('PUT', '/api/settings', { body: { log_retention_days: 30 } })).status, 200);
    await schedule.run!();
    t.equal(await status(gw, 'early'), 404, 'deleted once the retention is 30 days');
    t.equal(await status(gw, 'recent'), 200, 'a record within the retention stays');
    const list = await gw.api('GET', '/api/logs');
    t.same(list.json.data.items.map((i: { request_id: string }) => i.request_id), ['recent']);
    const usage = await gw.api('GET', '/api/usage');
    t.equal(usage.json.data.totals.requests, 1, 'usage no longer counts the deleted record');

    await gw.stop();
    t.ok(schedule.stopped, 'closing the server stops the schedule');
  });
}

t.test('retention also runs when the server starts', async (t) => {
  const gw = await startGateway(t, { ...STORES[1]!.options, logRetentionSchedule: manualSchedule().option });
  gw.server.logs.append(logRecord({ request_id: 'early', created_at: gw.clock.now }));
  gw.server.logs.append(logRecord({ request_id: 'recent', created_at: gw.clock.now + 2 * DAY_MS }));
  await gw.server.logs.flush();
  gw.clock.advance(31 * DAY_MS);
  await gw.restart();
  await eventually(async () => ((await status(gw, 'early')) === 404 ? true : undefined), 'the record older than 30 days to be deleted');
  t.equal(await status(gw, 'recent'), 200, 'the newer one stays');
});
