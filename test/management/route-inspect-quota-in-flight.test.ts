import type { ServerResponse } from 'node:http';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { seedAccessKey, startGateway } from './support/gateway.ts';

// A request in flight holds its place toward its key's requests limit (the data plane's quota
// meter refuses the next one): route inspection, and the key's /api/home, weigh the key as that meter does.

t.test('inspection while the only request a quota allows is in flight: quota_exceeded, as the data plane answers', async (t) => {
  const held: ServerResponse[] = [];
  let answered!: () => void;
  const reached = new Promise<void>((resolve) => (answered = resolve));
  const upstream = await startUpstream((_req, res) => {
    held.push(res);
    answered();
  });
  t.teardown(() => upstream.close());
  // The real clock: the data plane and the management plane read the same one, and the quota's total has no period.
  const gw = await startGateway(t, { clock: Date.now, mountDataPlane: dataPlaneMount(), openLogStore: async (dir) => openSqliteLogStore(dir) });
  const groupId = (await gw.create('/api/groups', { name: 'g', channel: 'ch09', base_url: upstream.url, models: [{ external: 'chat-model' }] })).json.data.id as number;
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-000000041' });
  const key = await seedAccessKey(gw, { quota: { total: { requests: 1 } } });
  const send = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
  const inspect = async () => (await gw.api('POST', '/api/route/inspect', { body: { protocol: 'x-completions', external_model: 'chat-model', access_key_id: key.id } })).json.data;

  t.match(await inspect(), { routable: true, access_key: { quota: { exceeded: false, lines: [{ metric: 'requests', limit: 1, used: 0 }] } } }, 'nothing used yet');
  const first = send();
  await reached;
  const second = await send();
  t.equal(second.status, 429, 'the data plane refuses a second request while the first is in flight');
  const refused = (await second.json()) as { error: { message: string } };
  t.match(refused, { error: { code: 'quota_exceeded' } });
  t.match(await inspect(), { routable: false, reason_code: 'quota_exceeded', detail: 'Total requests limit 1 reached.', access_key: { quota: { exceeded: true, lines: [{ metric: 'requests', limit: 1, used: 1 }] } } }, 'inspection agrees');

  t.ok(refused.error.message.endsWith('Total requests limit 1 reached.'), 'the detail is the data plane\'s own');
  const home = await gw.api('GET', '/api/home', { token: key.value });
  t.match(home.json.data.quota, { exceeded: true, lines: [{ metric: 'requests', limit: 1, used: 1 }] }, "the key's own /api/home weighs it as the data plane does");

  held[0]!.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  t.equal((await first).status, 200);
});
