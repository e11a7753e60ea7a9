import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startGateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, createKey, deferred, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';

// A stream a shutdown ends before its first byte is answered 503 shutting_down: unlike a stall
// or a break (x-should-retry: false, the upstream took the request), an SDK's retry of it goes
// to a gateway that is up again, so the answer leaves the SDKs to retry it.

t.test('a stream ended by the shutdown before its first byte: 503 shutting_down without x-should-retry', async (t) => {
  const headSent = deferred();
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    headSent.resolve();
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now, shutdownGraceMs: 200, openLogStore: (dir) => openSqliteLogStore(dir) });
  await seedGroup(gw.server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-upstream-1'] });
  const { key, keyValue } = await createKey(gw.server.store, { protocols: ['x-completions'] });

  const answer = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: chatBody('team-m', true),
  });
  await withTimeout(headSent.promise, 5000, 'the upstream to send its head');
  // Time for the head to reach the gateway, so that the relay holds it; the record below says whether it did.
  await sleep(200);
  const stopped = gw.stop();
  const res = await withTimeout(answer, 5000, 'the answer');
  t.equal(res.status, 503);
  t.match(await res.json(), { error: { code: 'shutting_down' } });
  t.equal(res.headers.get('x-should-retry'), null, 'an SDK may retry it');
  await stopped;

  const logs = openSqliteLogStore(gw.dataDir);
  t.teardown(() => logs.close());
  const records = (await logs.list({ access_key_id: key.id }, { limit: 5 })).items;
  t.match(records, [{ status: 503, error_code: 'shutting_down', attempts: [{ status: 200, error_code: 'shutting_down' }] }], "the stream's held head was answered instead");
});
