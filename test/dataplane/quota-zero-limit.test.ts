import t from 'tap';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders } from './helpers/dataplane-scenarios.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway } from '../management/support/gateway.ts';

// A per-period limit says when it lifts (Retry-After); one of 0 never does, as a total limit
// (docs/data-plane.md, step 2).

t.test('a per-period limit of 0 is refused without Retry-After; a per-period limit of 1 used up has it', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  gw.clock.now = Date.parse('2026-03-02T11:00:00.000Z');
  const groupId = await seedGroup(gw, ['team-m'], { base_url: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-zero-0001' })).status, 200);
  const send = (value: string) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...clientAuthHeaders('x-completions', value), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [] }) });

  for (const metric of ['requests', 'tokens', 'cost']) {
    const zero = await seedAccessKey(gw, { quota: { per_period: { period: 'hour', [metric]: 0 } } });
    const refused = await send(zero.value);
    t.equal(refused.status, 429, `${metric}: 0`);
    t.match(await refused.json(), { error: { code: 'quota_exceeded' } });
    t.equal(refused.headers.get('retry-after'), null, `${metric}: a limit of 0 does not lift when the hour turns`);
    t.equal(refused.headers.get('x-should-retry'), 'false');
  }

  const one = await seedAccessKey(gw, { quota: { per_period: { period: 'hour', requests: 1 } } });
  const first = await send(one.value);
  t.equal(first.status, 200);
  await first.text();
  const again = await send(one.value);
  t.equal(again.status, 429);
  t.equal(again.headers.get('retry-after'), '3600', 'the seconds until 12:00');
  t.equal(again.headers.get('x-should-retry'), 'false');
  t.equal(upstream.requests.length, 1);
});
