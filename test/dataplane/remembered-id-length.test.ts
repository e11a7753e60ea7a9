import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// The id of a created response comes from the upstream's answer: one far longer than any real id
// is not remembered (in memory and with the logs), so that an upstream answering megabyte ids
// cannot fill either; the call is answered as any other.

t.test('a response id longer than any real one is not remembered; a real one is', async (t) => {
  const ids = ['resp_short_1', `resp_${'x'.repeat(4096)}`];
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: ids.shift(), object: 'response', status: 'completed', output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
  });
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-upstream-1'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi' }) });
    t.equal(res.status, 200, `create ${i + 1} answered`);
    await res.arrayBuffer();
    await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  }
  const kept = await gw.logs.loadStoredObjects(10);
  t.same(
    kept.map((o) => o.key),
    ['response:resp_short_1'],
    'only the real id is kept with the logs',
  );
});
