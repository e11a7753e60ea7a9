import t from 'tap';
import { startGateway } from './support/gateway.ts';
import { staticServer } from './support/static-server.ts';

// The optional audio and image prices: accepted, returned, bounded, synced, and kept across a restart.

const RATES = ['audio_input_per_mtok', 'audio_output_per_mtok', 'image_input_per_mtok'] as const;

t.test('model prices: the audio and image rates are accepted, returned, optional and bounded', async (t) => {
  const gw = await startGateway(t);
  const body = { input_per_mtok: 2.5, output_per_mtok: 10, audio_input_per_mtok: 40, audio_output_per_mtok: 80, image_input_per_mtok: 10 };
  const put = await gw.api('PUT', '/api/model-prices/vendor-m', { body });
  t.equal(put.status, 200);
  t.match(put.json.data, { model: 'vendor-m', ...body, source: 'manual' });
  t.match((await gw.api('GET', '/api/model-prices?model=vendor-m')).json.data, [{ model: 'vendor-m', audio_input_per_mtok: 40, audio_output_per_mtok: 80, image_input_per_mtok: 10 }]);
  const without = await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 2.5, output_per_mtok: 10 } });
  for (const rate of RATES) t.notOk(rate in without.json.data, `${rate} absent when not given: the input or output price applies`);
  for (const rate of RATES) {
    for (const price of [-0.01, 1_000_001, 1e308]) {
      const refused = await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, [rate]: price } });
      t.equal(refused.status, 400, `${rate} ${price}: refused`);
      t.match(refused.json, { code: 'VALIDATION_FAILED', data: { field: rate, reason: 'invalid_value' } });
    }
    t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, [rate]: 1_000_000 } })).status, 200, `${rate}: the most a price may be`);
    t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 3, output_per_mtok: 15, [rate]: 0 } })).status, 200, `${rate}: free`);
  }
});

t.test('model prices: a synced list carries the audio and image rates, and a stored one survives a restart', async (t) => {
  const remote = { model: 'remote-model', input_per_mtok: 4, output_per_mtok: 16, audio_input_per_mtok: 32, audio_output_per_mtok: 64, image_input_per_mtok: 8 };
  const base = await staticServer(t, {
    '/prices.json': { body: JSON.stringify({ version: 1, prices: [remote] }) },
    '/too-high.json': { body: JSON.stringify({ version: 1, prices: [{ ...remote, audio_output_per_mtok: 1_000_001 }] }) },
  });
  const gw = await startGateway(t);
  const synced = await gw.api('POST', '/api/model-prices/sync', { body: { source: 'url', url: `${base}/prices.json` } });
  t.match(synced.json.data, { added: 1 });
  t.match((await gw.api('GET', '/api/model-prices?model=remote-model')).json.data, [{ ...remote, source: 'sync' }]);
  const tooHigh = await gw.api('POST', '/api/model-prices/sync', { body: { url: `${base}/too-high.json` } });
  t.equal(tooHigh.status, 502, 'a list with an audio rate out of bounds is refused whole');
  t.equal(tooHigh.json.data.reason, 'remote_invalid');
  t.equal((await gw.api('PUT', '/api/model-prices/plain-model', { body: { input_per_mtok: 1, output_per_mtok: 2 } })).status, 200);
  await gw.restart();
  t.match((await gw.api('GET', '/api/model-prices?model=remote-model')).json.data, [remote], 'the stored rates load again');
  t.match((await gw.api('GET', '/api/model-prices?model=plain-model')).json.data, [{ model: 'plain-model', input_per_mtok: 1 }], 'and so does a price without them');
});
