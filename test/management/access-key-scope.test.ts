import t from 'tap';
import { ACCESS_KEY_ROUTES } from '../../src/auth/access-key-routes.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { logRecord } from './support/log-records.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

/** A concrete path for a route pattern; parameters get plausible values. */
function concrete(pattern: string): string {
  return pattern.replace(/:([a-z_]+)/g, (_m, name: string) => (name === 'channel_id' ? 'ch02' : name === 'model' ? 'chat-model' : name === 'request_id' ? 'req-1' : '1'));
}

t.test('an AccessKey gets 403 FORBIDDEN on every management route outside its seven', async (t) => {
  const gw = await startGateway(t);
  await seedGroup(gw);
  const key = await seedAccessKey(gw);
  const routes = gw.server.managementRoutes();
  t.ok(routes.length > 40, `the router has ${routes.length} operations`);
  const allowed = routes.filter((r) => ACCESS_KEY_ROUTES.includes(`${r.method} ${r.path}`));
  t.equal(allowed.length, 7, 'the seven of spec section 5 item 3 are all registered');
  for (const r of routes) {
    const res = await gw.api(r.method, concrete(r.path), { token: key.value, body: r.method === 'GET' || r.method === 'DELETE' ? undefined : {} });
    if (ACCESS_KEY_ROUTES.includes(`${r.method} ${r.path}`)) t.not(res.status, 403, `${r.method} ${r.path} is allowed`);
    else {
      t.equal(res.status, 403, `${r.method} ${r.path}`);
      t.equal(res.json.code, 'FORBIDDEN');
    }
  }
  t.equal((await gw.api('GET', '/api/groups')).json.data[0].name, 'primary', 'nothing changed by any of them');
  t.equal((await gw.api('GET', '/api/access-keys')).json.data.length, 1);
});

t.test('403 comes before anything else: no Idempotency-Key and a bad body still get 403', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  const res = await gw.api('POST', '/api/groups', { token: key.value, body: '[not json' });
  t.equal(res.status, 403);
});

t.test('the seven routes are scoped to the key\'s own data', async (t) => {
  const logs = new MemoryLogStore();
  const gw = await startGateway(t, { logStore: logs });
  await seedGroup(gw, ['chat-model', 'other-model']);
  const mine = await seedAccessKey(gw, { models: ['chat-model'] });
  const theirs = await seedAccessKey(gw);
  logs.append(logRecord({ request_id: 'mine-1', access_key_id: mine.id, created_at: gw.clock.now - 1000, request_body: { state: 'recorded', original_bytes: 55, body: '{"model":"chat-model","api_key_in_prompt":"sk-visible"}' } }));
  logs.append(logRecord({ request_id: 'mine-2', access_key_id: mine.id, created_at: gw.clock.now - 500 }));
  logs.append(logRecord({ request_id: 'theirs-1', access_key_id: theirs.id, created_at: gw.clock.now - 100, usage: { input_tokens: 1000, output_tokens: 1000, cached_tokens: 0, reasoning_tokens: 0 } }));

  const session = await gw.api('GET', '/api/auth/session', { token: mine.value });
  t.equal(session.json.data.principal, 'access_key');
  t.equal(session.json.data.access_key.id, mine.id);
  t.notOk('value' in session.json.data.access_key);

  const list = await gw.api('GET', `/api/logs?access_key_id=${theirs.id}`, { token: mine.value });
  t.same(list.json.data.items.map((i: { request_id: string }) => i.request_id), ['mine-2', 'mine-1'], 'only its own requests, whatever it asks for');
  const adminList = await gw.api('GET', '/api/logs');
  t.equal(adminList.json.data.items.length, 3, 'the AUTH_KEY sees all');

  const own = await gw.api('GET', '/api/logs/mine-1', { token: mine.value });
  t.equal(own.status, 200);
  t.same(own.json.data.request_body, { state: 'recorded', original_bytes: 55, body: '{"model":"chat-model","api_key_in_prompt":"sk-visible"}' }, 'the original body, unredacted, to the key that sent it');
  const adminDetail = await gw.api('GET', '/api/logs/mine-1');
  t.same(adminDetail.json.data.request_body, own.json.data.request_body, 'and to the AUTH_KEY');
  const notRecorded = await gw.api('GET', '/api/logs/mine-2', { token: mine.value });
  t.notOk('request_body' in notRecorded.json.data, 'absent when nothing was recorded');
  const other = await gw.api('GET', '/api/logs/theirs-1', { token: mine.value });
  t.equal(other.status, 404, 'another key\'s request does not exist for this key');

  const usage = await gw.api('GET', '/api/usage', { token: mine.value });
  t.equal(usage.json.data.totals.requests, 2);
  t.equal(usage.json.data.totals.input_tokens, 20);
  const models = await gw.api('GET', '/api/models', { token: mine.value });
  t.same(models.json.data, [{ model: 'chat-model' }], 'only visible models, without Group details');
  const home = await gw.api('GET', '/api/home', { token: mine.value });
  t.equal(home.json.data.access_key.id, mine.id);
  t.notOk('groups' in home.json.data, 'no configuration in its home');
  const stats = await gw.api('GET', '/api/home/statistics?range=24h', { token: mine.value });
  t.equal(stats.json.data.totals.requests, 2);
});
