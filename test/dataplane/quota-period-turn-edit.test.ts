import { request, type IncomingMessage } from 'node:http';
import t, { type Test } from 'tap';
import { clientAuthHeaders, eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openWorkerLogStore } from '../../src/store/logs/index.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';

// A key's quota edited while a request that started in the last period still uploads its body:
// the request is checked again once its body is in, and the meter rebuilt for the new quota
// counts the period running now, neither the last one nor the next (docs/data-plane.md, step 2).

const at = (iso: string) => Date.parse(iso);
const BOUND_MS = 30_000;
const HEAD = '{"model":"team-m",';
const REST = '"messages":[]}';

async function gatewayWithQuota(t: Test, store: 'memory' | 'worker', quota: Record<string, unknown>) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), ...(store === 'worker' ? { openLogStore: (dir: string) => openWorkerLogStore(dir) } : {}) });
  const groupId = await seedGroup(gw, ['team-m'], { base_url: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-edit-0001' })).status, 200);
  const key = await seedAccessKey(gw, { quota });
  /** A request at `iso`, answered and (if forwarded) in the logs before it resolves. */
  const send = async (iso: string) => {
    gw.clock.now = at(iso);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...clientAuthHeaders('x-completions', key.value), 'content-type': 'application/json' },
      body: HEAD + REST,
    });
    await res.text();
    if (res.status === 200) await logged(gw, res.headers.get('x-switchyard-request-id')!);
    return res.status;
  };
  /**
   * Starts a request at `iso` and holds its body: resolves once the gateway has admitted it (its
   * `100 Continue` comes after the key and quota checks), with `finish`, which sends the body.
   */
  const startUpload = async (iso: string) => {
    gw.clock.now = at(iso);
    const u = new URL(gw.url);
    let finish!: () => Promise<number>;
    await withTimeout(
      new Promise<void>((admitted, reject) => {
        const answer = new Promise<IncomingMessage>((resolve) => {
          const req = request({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', headers: { ...clientAuthHeaders('x-completions', key.value), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(HEAD + REST)), expect: '100-continue' } }, resolve);
          req.on('error', reject);
          req.on('continue', () => admitted());
          finish = async () => {
            req.end(HEAD + REST);
            const res = await withTimeout(answer, BOUND_MS, 'the answer');
            res.resume();
            await new Promise((done) => res.on('end', done));
            if (res.statusCode === 200) await logged(gw, res.headers['x-switchyard-request-id'] as string);
            return res.statusCode!;
          };
        });
        void answer.then((res) => reject(new Error(`answered ${res.statusCode} before its body`)));
      }),
      BOUND_MS,
      'the gateway to admit the request',
    );
    return finish;
  };
  const editQuota = async (quota: Record<string, unknown>) => t.equal((await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { quota } })).status, 200);
  const used = async () => (await gw.api('GET', '/api/home', { token: key.value })).json.data.quota.lines.map((l: { used: number; limit: number }) => `${l.used} of ${l.limit}`);
  return { gw, upstream, send, startUpload, editQuota, used };
}

async function logged(gw: Gateway, requestId: string): Promise<void> {
  await eventually(async () => ((await gw.api('GET', `/api/logs/${requestId}`)).status === 200 ? true : undefined), `the record of ${requestId}`);
}

for (const store of ['memory', 'worker'] as const) {
  t.test(`${store}: a quota edited while last day's upload runs keeps today's usage; the upload counts in its own day`, async (t) => {
    const { upstream, send, startUpload, editQuota, used } = await gatewayWithQuota(t, store, { per_period: { period: 'day', requests: 2 } });
    const finish = await startUpload('2026-03-02T23:59:50.000Z');
    t.equal(await send('2026-03-03T00:00:10.000Z'), 200);
    t.equal(await send('2026-03-03T00:00:11.000Z'), 200);
    t.equal(await send('2026-03-03T00:00:12.000Z'), 429, 'today\'s limit of 2 is used');
    await editQuota({ per_period: { period: 'day', requests: 3 } });
    t.equal(await finish(), 200, 'the upload from yesterday takes no place of today');
    t.equal(await send('2026-03-03T00:00:20.000Z'), 200, 'the third of today\'s 3');
    t.equal(await send('2026-03-03T00:00:21.000Z'), 429, 'today\'s 3 are used: the two before the edit still count');
    t.equal(upstream.requests.length, 4);
    t.same(await used(), ['3 of 3'], '/api/home agrees');
  });

  t.test(`${store}: a request of the last day, checked again after an edit, is judged by the day running now`, async (t) => {
    const { gw, upstream, send, startUpload, editQuota, used } = await gatewayWithQuota(t, store, { per_period: { period: 'day', requests: 2 } });
    t.equal(await send('2026-03-02T23:59:40.000Z'), 200);
    const finish = await startUpload('2026-03-02T23:59:50.000Z');
    gw.clock.now = at('2026-03-03T00:00:10.000Z');
    await editQuota({ per_period: { period: 'day', requests: 1 } });
    t.equal(await finish(), 200, 'today\'s 1 is free: yesterday\'s request before it is not counted against it');
    t.equal(await send('2026-03-03T00:00:20.000Z'), 200, 'the upload counts in yesterday, not today');
    t.equal(await send('2026-03-03T00:00:21.000Z'), 429, 'today\'s 1 is used');
    t.equal(upstream.requests.length, 3);
    t.same(await used(), ['1 of 1']);
  });
}
