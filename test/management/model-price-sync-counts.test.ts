import t from 'tap';
import { startGateway } from './support/gateway.ts';
import { staticServer } from './support/static-server.ts';

// A synced list that names a model twice stores its last entry, once: the sync's counts are of
// models, so a model new to the gateway is `added` once, not also `updated` by its own repeat.

t.test('a synced list naming a model twice: its last price, counted once', async (t) => {
  const base = await staticServer(t, {
    '/prices.json': {
      body: JSON.stringify({
        version: 1,
        prices: [
          { model: 'twice', input_per_mtok: 1, output_per_mtok: 1 },
          { model: 'once', input_per_mtok: 3, output_per_mtok: 3 },
          { model: 'twice', input_per_mtok: 2, output_per_mtok: 2 },
          { model: 'mine', input_per_mtok: 4, output_per_mtok: 4 },
          { model: 'mine', input_per_mtok: 5, output_per_mtok: 5 },
        ],
      }),
    },
  });
  const gw = await startGateway(t);
  t.equal((await gw.api('PUT', '/api/model-prices/mine', { body: { input_per_mtok: 9, output_per_mtok: 9 } })).status, 200);
  const synced = await gw.api('POST', '/api/model-prices/sync', { body: { url: `${base}/prices.json` } });
  t.equal(synced.status, 200);
  t.match(synced.json.data, { added: 2, updated: 0, kept_manual: 1 });
  t.match((await gw.api('GET', '/api/model-prices?source=sync')).json.data, [{ model: 'once', input_per_mtok: 3 }, { model: 'twice', input_per_mtok: 2 }]);
  const again = await gw.api('POST', '/api/model-prices/sync', { body: { url: `${base}/prices.json` } });
  t.match(again.json.data, { added: 0, updated: 2, kept_manual: 1 });
});
