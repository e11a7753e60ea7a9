import t from 'tap';
import { CHANNEL_IDS } from '../../src/generated/index.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';
import { staticServer } from './support/static-server.ts';

t.test('channels: one descriptor per channel from the generated tables', async (t) => {
  const gw = await startGateway(t);
  const list = await gw.api('GET', '/api/channels');
  t.same(list.json.data.map((c: { id: string }) => c.id), [...CHANNEL_IDS]);
  const ch32 = (await gw.api('GET', '/api/channels/ch32')).json.data;
  t.match(ch32, { id: 'ch32', requires_base_url: true, discovery: true, proxy: true });
  t.same(ch32.credential_kinds.map((k: { id: string }) => k.id), ['api_key_base_url']);
  t.match(ch32.credential_kinds[0].fields, [{ name: 'api_key', required: true, secret: true }, { name: 'base_url', required: true, secret: false }]);
  t.ok(ch32.notes.some((n: { id: number; text: string }) => n.id === 3 && n.text.length > 0));
  t.match(ch32.capabilities['x-completions']['chat-completions'], { capability: 'CC', declared: 'N', route: { ok: true, effective: 'native' } });
  t.match(ch32.capabilities['x-responses']['responses-retrieve'], { declared: 'N*', route: { ok: false, reason_code: 'operation_outside_native_subset' } });
  const ch02 = (await gw.api('GET', '/api/channels/ch02')).json.data;
  t.match(ch02.capabilities['x-messages']['messages-create'], { declared: 'C', route: { ok: true, effective: 'converted' } });
  t.equal(ch02.requires_base_url, false);
  t.equal((await gw.api('GET', '/api/channels/ch99')).status, 404);
});

t.test('models: the project model list, and discovery needs the adapters', async (t) => {
  const gw = await startGateway(t);
  const g = await seedGroup(gw, ['alpha', 'beta']);
  await gw.create('/api/groups', { name: 'second', channel: 'ch09', base_url: 'https://b.test', models: [{ external: 'alpha', upstream: 'alpha-2' }] });
  const list = (await gw.api('GET', '/api/models')).json.data;
  t.same(list.map((m: { model: string }) => m.model), ['alpha', 'beta']);
  t.same(list[0].groups.map((x: { upstream: string }) => x.upstream), ['alpha', 'alpha-2']);
  const key = await seedAccessKey(gw, { groups: [g], models: ['beta'] });
  t.same((await gw.api('GET', '/api/models', { token: key.value })).json.data, [{ model: 'beta' }]);
  await gw.create(`/api/groups/${g}/credentials/import`, { credentials: 'sk-discover-000001' });
  const discover = await gw.api('POST', '/api/models/discover', { body: { group_id: g } });
  t.equal(discover.status, 503);
  t.same(discover.json.data, { reason: 'model_discovery_not_available' });
});

t.test('models: discovery through a provider', async (t) => {
  const gw = await startGateway(t, { modelDiscovery: { list: async ({ values }) => ({ models: values.api_key === 'sk-discover-000001' ? ['alpha', 'gamma'] : [], truncated: false }) } });
  const g = await seedGroup(gw, ['alpha']);
  const none = await gw.api('POST', '/api/models/discover', { body: { group_id: g } });
  t.equal(none.status, 409, 'no active credential to ask with');
  await gw.create(`/api/groups/${g}/credentials/import`, { credentials: 'sk-discover-000001' });
  const res = await gw.api('POST', '/api/models/discover', { body: { group_id: g } });
  t.same(res.json.data.models, [{ id: 'alpha', configured: true }, { id: 'gamma', configured: false }]);
  const ch08 = (await gw.create('/api/groups', { name: 'no-disc', channel: 'ch08' })).json.data.id;
  t.match((await gw.api('POST', '/api/models/discover', { body: { group_id: ch08 } })).json.data, { field: 'group_id', reason: 'channel_without_discovery' });
});

t.test('model prices: update, query, reset to the catalog, delete, sync', async (t) => {
  const gw = await startGateway(t);
  const synced = await gw.api('POST', '/api/model-prices/sync');
  t.match(synced.json.data, { source: 'catalog', added: 4, updated: 0, kept_manual: 0 });
  const put = await gw.api('PUT', '/api/model-prices/example-chat-small', { body: { input_per_mtok: 1, output_per_mtok: 2 } });
  t.match(put.json.data, { model: 'example-chat-small', input_per_mtok: 1, output_per_mtok: 2, source: 'manual' });
  t.notOk('cached_input_per_mtok' in put.json.data);
  const again = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'catalog' } });
  t.match(again.json.data, { added: 0, updated: 3, kept_manual: 1 }, 'a sync keeps prices set by hand');
  const query = await gw.api('GET', '/api/model-prices?model=small');
  t.match(query.json.data, [{ model: 'example-chat-small', source: 'manual', in_catalog: true }]);
  const reset = await gw.api('POST', '/api/model-prices/example-chat-small/reset');
  t.match(reset.json.data, { input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075, source: 'catalog' });
  await gw.api('PUT', '/api/model-prices/my%2Fcustom', { body: { input_per_mtok: 5, output_per_mtok: 5 } });
  t.equal((await gw.api('GET', '/api/model-prices?source=manual')).json.data[0].model, 'my/custom', 'names with a slash travel encoded');
  t.equal((await gw.api('POST', '/api/model-prices/my%2Fcustom/reset')).status, 404, 'nothing in the catalog to reset to');
  t.equal((await gw.api('DELETE', '/api/model-prices/my%2Fcustom')).status, 200);
  t.equal((await gw.api('DELETE', '/api/model-prices/my%2Fcustom')).status, 404);
  const invalid = await gw.api('PUT', '/api/model-prices/x', { body: { input_per_mtok: -1, output_per_mtok: 1 } });
  t.match(invalid.json.data, { field: 'input_per_mtok', reason: 'invalid_value' });
  // A price so large that a request's cost is no finite number would leave every sum null.
  const absurd = await gw.api('PUT', '/api/model-prices/x', { body: { input_per_mtok: 1e308, output_per_mtok: 1 } });
  t.equal(absurd.status, 400);
  t.match(absurd.json.data, { field: 'input_per_mtok' });
  t.equal((await gw.api('PUT', '/api/model-prices/x', { body: { input_per_mtok: 1_000_000, output_per_mtok: 1 } })).status, 200, 'a million USD per million tokens is the most a price may be');
  // A price is for a name a Group's model can have: 1 to 300 characters, not blank.
  for (const name of ['%20', '%20%20', 'm'.repeat(301)]) {
    const refused = await gw.api('PUT', `/api/model-prices/${name}`, { body: { input_per_mtok: 1, output_per_mtok: 1 } });
    t.equal(refused.status, 400, `${name.slice(0, 12)}: refused`);
    t.match(refused.json.data, { field: 'model', reason: 'invalid_value' });
  }
  t.equal((await gw.api('PUT', `/api/model-prices/${'m'.repeat(300)}`, { body: { input_per_mtok: 1, output_per_mtok: 1 } })).status, 200, '300 characters');
  t.notOk((await gw.api('GET', '/api/model-prices?source=manual')).json.data.some((p: { model: string }) => p.model.trim() === '' || p.model.length > 300), 'nothing refused was stored');
});

t.test('model prices: sync from a URL, and a failing URL is 502', async (t) => {
  const base = await staticServer(t, {
    '/prices.json': { body: JSON.stringify({ version: 1, prices: [{ model: 'remote-model', input_per_mtok: 1.25, output_per_mtok: 10 }] }) },
    '/broken.json': { body: '{"prices": [' },
    '/wrong.json': { body: JSON.stringify({ prices: [{ model: 'x' }] }) },
    '/down.json': { status: 503, body: '' },
  });
  const gw = await startGateway(t);
  const res = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url', url: `${base}/prices.json` } });
  t.match(res.json.data, { source: `${base}/prices.json`, added: 1 });
  t.match((await gw.api('GET', '/api/model-prices')).json.data, [{ model: 'remote-model', source: 'sync' }]);
  const needsUrl = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url' } });
  t.match(needsUrl.json.data, { field: 'url', reason: 'required' });
  const fileUrl = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url', url: 'file:///etc/passwd' } });
  t.equal(fileUrl.status, 400, 'a URL that is not HTTP(S) is bad input, not a remote failure');
  t.match(fileUrl.json.data, { field: 'url', reason: 'invalid_value' });
  await gw.api('PUT', '/api/settings', { body: { model_price_sync_url: `${base}/prices.json` } });
  t.equal((await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url' } })).status, 200, 'the configured URL is used');
  for (const [path, reason] of [['/broken.json', 'remote_not_json'], ['/wrong.json', 'remote_invalid'], ['/down.json', 'remote_status']] as const) {
    const bad = await gw.api('POST', '/api/model-prices/sync', { body: { url: `${base}${path}` } });
    t.equal(bad.status, 502, path);
    t.equal(bad.json.code, 'BAD_GATEWAY');
    t.equal(bad.json.data.reason, reason);
  }
});
