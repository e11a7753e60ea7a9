import t from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, deferred, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';

// The data plane's upstream client has no cap on connections per origin: its concurrency
// follows its clients'. Under a cap (undici's pool), a request past it would wait in the
// pool's queue, where request_timeout_seconds does not count, behind answers that may take minutes.

/** More than the 256 connections per origin the client used to allow. */
const CONCURRENT = 300;
/** Only bounds a hung test. */
const BOUND_MS = 30_000;

t.test(`${CONCURRENT} requests at once to one upstream origin are all in flight upstream at the same time`, async (t) => {
  const allArrived = deferred();
  const held: ServerResponse[] = [];
  const upstream = await startUpstream((_req, res) => {
    held.push(res);
    if (held.length === CONCURRENT) allArrived.resolve();
    // Each answer waits until every request has reached the upstream.
    return allArrived.promise.then(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(completionJson('vendor-m'));
    });
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  await seedGroup(gw.server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.server.store, { protocols: ['x-completions'] });

  const statuses = Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-m') });
      await res.text();
      return res.status;
    }),
  );
  await withTimeout(allArrived.promise, BOUND_MS, `all ${CONCURRENT} requests to reach the upstream`).finally(() => allArrived.resolve());
  t.equal(held.length, CONCURRENT, 'every request reached the upstream before any was answered');
  t.same([...new Set(await statuses)], [200]);
});
