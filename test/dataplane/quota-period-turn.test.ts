import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, deferred, eventually, type Deferred } from './helpers/dataplane-scenarios.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';

// A request admitted in one period and still running when the next begins: its record counts
// in the period it started in (docs/data-plane.md, step 2), so its place must not block the new one.

const at = (iso: string) => Date.parse(iso);

/** A gateway whose upstream answers a request whose body names `hold` once that deferred settles. */
async function gatewayWithHeldUpstream(t: Test, quota: Record<string, unknown>) {
  const holds = new Map<string, Deferred>();
  const upstream = await startUpstream(async (req: RecordedUpstreamRequest, res: ServerResponse) => {
    const hold = JSON.parse(req.body.toString()).hold as string | undefined;
    if (hold) await holds.get(hold)!.promise;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['team-m'], { base_url: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-turn-0001' })).status, 200);
  const key = await seedAccessKey(gw, { quota });
  /** Sends a request; one with `hold` waits at the upstream until `release(hold)`. */
  const send = (hold?: string) => {
    if (hold) holds.set(hold, deferred());
    return fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...clientAuthHeaders('x-completions', key.value), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'team-m', messages: [], ...(hold ? { hold } : {}) }),
    });
  };
  const release = async (hold: string, answer: Promise<Response>) => {
    holds.get(hold)!.resolve();
    const res = await answer;
    await res.text();
    await logged(gw, res.headers.get('x-switchyard-request-id')!);
    return res;
  };
  const reached = (n: number) => eventually(() => (upstream.requests.length === n ? true : undefined), `${n} requests at the upstream`);
  return { gw, upstream, send, release, reached };
}

/** Waits until the request's record is in the logs (the meter counts it from then on). */
async function logged(gw: Gateway, requestId: string): Promise<void> {
  await eventually(async () => ((await gw.api('GET', `/api/logs/${requestId}`)).status === 200 ? true : undefined), `the record of ${requestId}`);
}

t.test('a request left over from the last hour does not hold a place in the new one; one of this hour still does', async (t) => {
  const { gw, upstream, send, release, reached } = await gatewayWithHeldUpstream(t, { per_period: { period: 'hour', requests: 1 } });
  gw.clock.now = at('2026-03-02T10:59:59.000Z');
  const old = send('old');
  await reached(1);
  gw.clock.now = at('2026-03-02T11:00:01.000Z');
  const current = send('current');
  const first = await Promise.race([reached(2).then(() => 'forwarded'), current.then((res) => `answered ${res.status}`)]);
  t.equal(first, 'forwarded', 'the new hour, unused, lets a request through while the last hour\'s still runs');

  gw.clock.now = at('2026-03-02T11:00:30.000Z');
  const refused = await send();
  t.equal(refused.status, 429, 'the one place of this hour is held by the request admitted in it');
  t.match(await refused.json(), { error: { code: 'quota_exceeded' } });
  t.equal(refused.headers.get('retry-after'), '3570', 'the seconds from 11:00:30 to 12:00:00');

  t.equal((await release('old', old)).status, 200);
  t.equal((await send()).status, 429, 'the last hour\'s request, ended, counts in the last hour and frees nothing in this one');
  t.equal((await release('current', current)).status, 200);
  const again = await send();
  t.equal(again.status, 429, 'a second request within the same hour is still refused once the first has ended');
  t.equal(again.headers.get('retry-after'), '3570');
  t.equal(upstream.requests.length, 2, 'the refused requests never reached the upstream');

  gw.clock.now = at('2026-03-02T12:00:00.000Z');
  t.equal((await send()).status, 200, 'the next hour is open');
});

t.test('a request left over from the last hour still holds its place toward a total limit', async (t) => {
  const { gw, upstream, send, release, reached } = await gatewayWithHeldUpstream(t, { total: { requests: 1 }, per_period: { period: 'hour', requests: 5 } });
  gw.clock.now = at('2026-03-02T10:59:59.000Z');
  const old = send('old');
  await reached(1);
  gw.clock.now = at('2026-03-02T11:00:01.000Z');
  const refused = await send();
  t.equal(refused.status, 429, 'the total limit of 1 is held by the request in flight');
  t.match(await refused.json(), { error: { code: 'quota_exceeded', message: /Total requests limit 1/ } });
  t.equal(refused.headers.get('retry-after'), null, 'a total limit does not lift by itself');
  t.equal((await release('old', old)).status, 200);
  t.equal((await send()).status, 429, 'the ended request counts toward the total');
  t.equal(upstream.requests.length, 1);
});
