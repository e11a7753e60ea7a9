import t from 'tap';
import { startGateway } from './support/gateway.ts';
import { staticServer } from './support/static-server.ts';

// The optional cache write price: accepted, returned, bounded, synced, and kept across a restart.

t.test('model prices: cache_write_per_mtok is accepted, returned, optional and bounded', async (t) => {
  const gw = await startGateway(t);
  const body = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 };
  const put = await gw.api('PUT', '/api/model-prices/vendor-m', { body });
  t.equal(put.status, 200);
  t.match(put.json.data, { model: 'vendor-m', ...body, source: 'manual' });
  t.match((await gw.api('GET', '/api/model-prices?model=vendor-m')).json.data, [{ model: 'vendor-m', cache_write_per_mtok: 3.75 }]);
  const without = await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15 } });
  t.notOk('cache_write_per_mtok' in without.json.data, 'absent when not given: the input price applies');
  for (const price of [-0.01, 1_000_001, 1e308]) {
    const refused = await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, cache_write_per_mtok: price } });
    t.equal(refused.status, 400, `${price}: refused`);
    t.equal(refused.json.code, 'VALIDATION_FAILED');
    t.match(refused.json.data, { field: 'cache_write_per_mtok', reason: 'invalid_value' });
  }
  t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, cache_write_per_mtok: 1_000_000 } })).status, 200, 'the most a price may be');
  t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, cache_write_per_mtok: 0 } })).status, 200, 'a free write');
});

t.test('model prices: the catalog and a synced list carry cache_write_per_mtok, and a stored one survives a restart', async (t) => {
  const base = await staticServer(t, {
    '/prices.json': { body: JSON.stringify({ version: 1, prices: [{ model: 'remote-model', input_per_mtok: 1, output_per_mtok: 5, cached_input_per_mtok: 0.1, cache_write_per_mtok: 1.25 }] }) },
    '/too-high.json': { body: JSON.stringify({ version: 1, prices: [{ model: 'remote-model', input_per_mtok: 1, output_per_mtok: 5, cache_write_per_mtok: 1_000_001 }] }) },
  });
  const gw = await startGateway(t);
  t.equal((await gw.api('POST', '/api/model-prices/sync', { body: { source: 'catalog' } })).status, 200);
  t.match((await gw.api('GET', '/api/model-prices?model=example-chat-large')).json.data, [{ cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75, source: 'catalog' }]);
  const synced = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url', url: `${base}/prices.json` } });
  t.match(synced.json.data, { added: 1 });
  t.match((await gw.api('GET', '/api/model-prices?model=remote-model')).json.data, [{ model: 'remote-model', cache_write_per_mtok: 1.25, source: 'sync' }]);
  const tooHigh = await gw.api('POST', '/api/model-prices/sync', { body: { url: `${base}/too-high.json` } });
  t.equal(tooHigh.status, 502, 'a list with a write price out of bounds is refused whole');
  t.equal(tooHigh.json.data.reason, 'remote_invalid');
  await gw.restart();
  t.match((await gw.api('GET', '/api/model-prices?model=remote-model')).json.data, [{ cache_write_per_mtok: 1.25 }], 'the stored price loads again');
  t.match((await gw.api('GET', '/api/model-prices?model=example-embedding')).json.data, [{ model: 'example-embedding' }], 'and so do prices without it');
});
