import t from 'tap';
import { holdTheNextWrite } from '../helpers/hold-the-next-write.ts';
import { startGateway } from './support/gateway.ts';

// "A sync never overwrites a price set by hand" (docs/management-api.md, Model prices) holds
// for a price set while the sync runs too: a manual price whose write was still on its way to
// disk when the sync looked at the prices is not replaced by the sync's write after it.

t.test('a sync started while a manual price is being written keeps that price', async (t) => {
  const gw = await startGateway(t);
  const prices = gw.server.store.modelPrices;
  let held!: () => void;
  const writing = new Promise<void>((resolve) => (held = resolve));
  const release = holdTheNextWrite(t, held);
  const put = gw.api('PUT', '/api/model-prices/example-chat-large', { body: { input_per_mtok: 9, output_per_mtok: 9 } });
  await writing;

  // The sync writes once the manual price's write is done, after it in the queue.
  const putMany = prices.putMany.bind(prices);
  let queued!: () => void;
  const syncQueued = new Promise<void>((resolve) => (queued = resolve));
  prices.putMany = (entries, source) => {
    const done = putMany(entries, source);
    queued();
    return done;
  };
  const sync = gw.api('POST', '/api/model-prices/sync', { body: {} });
  await syncQueued;
  release();

  t.equal((await put).status, 200);
  const synced = await sync;
  t.equal(synced.status, 200);
  t.match(synced.json.data, { source: 'catalog', added: 3, updated: 0, kept_manual: 1 });
  const listed = await gw.api('GET', '/api/model-prices?model=example-chat-large');
  t.match(listed.json.data, [{ model: 'example-chat-large', input_per_mtok: 9, output_per_mtok: 9, source: 'manual' }]);
});
