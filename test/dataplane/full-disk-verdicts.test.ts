import t from 'tap';
import { fillTheDisk } from '../helpers/fill-the-disk.ts';
import { startDataPlane, startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A credential's verdict (cooldown, disable) is a configuration write (a cooldown's with the others
// of its window): on a disk that refuses it, the request it came from still fails over and is
// answered, never a 500.

t.test('an upstream 429 while the configuration disk is full: the next credential answers, and the request is not failed by the lost cooldown', async (t) => {
  const upstream = await startUpstream((req, res) => {
    if (String(req.headers.authorization) === 'Bearer sk-limited') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' }).end('{"error":{"message":"slow down"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(completionJson('vendor-chat'));
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane({ cooldownFlushMs: 20 });
  t.teardown(() => gw.close());
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], secrets: ['sk-limited', 'sk-fine'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  fillTheDisk(t);

  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
    t.equal(res.status, 200, `request ${i + 1}: answered by a credential`);
    await res.text();
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.status, 200);
  }
  // Once the window's write of the cooldown was tried.
  for (let i = 0; i < 500 && !gw.store.writesFailing(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.ok(gw.store.writesFailing(), 'the store says its writes fail');
  t.ok(upstream.requests.some((r) => String(r.headers.authorization) === 'Bearer sk-limited'), 'the limited credential was tried and answered 429');
});
