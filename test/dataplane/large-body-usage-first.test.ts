import type { ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { rawRequest, waitForLog } from './helpers/dataplane-scenarios.ts';

// A plain JSON answer past the 4 MiB capture limit keeps only its tail for usage. Jina-style
// embeddings upstreams put the top-level `usage` before `data`: it is read from the body's
// head as the body passes the limit, so such an answer is not recorded without usage and cost.

const NONE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
const USAGE = { prompt_tokens: 700_000, total_tokens: 700_000 };
// 700k input tokens at 2 per million.
const RECORDED = { ...NONE, input_tokens: 700_000 };
const COST = 1.4;

/** About 6 MiB of embeddings, each item given `extra` members first. */
function items(extra: Record<string, unknown> = {}): object[] {
  const embedding = Array.from({ length: 1024 }, (_, i) => 0.0123456789 + i / 1e7);
  return Array.from({ length: 280 }, (_, index) => ({ ...extra, object: 'embedding', index, embedding }));
}

async function embeddings(t: Test, body: Buffer, coding?: string) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json', ...(coding ? { 'content-encoding': coding } : {}) });
    // In pieces, so that the body reaches the gateway in several reads.
    for (let at = 0; at < body.length; at += 40_001) await new Promise<void>((resolve) => res.write(body.subarray(at, at + 40_001), () => resolve()));
    res.end();
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch21', baseUrl: upstream.url, models: [{ external: 'emb', upstream: 'u' }], protocols: ['x-chat-embeddings'] });
  await gw.store.modelPrices.put('u', { input_per_mtok: 2, output_per_mtok: 8 }, 'manual');
  const res = await rawRequest(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'emb', input: ['a', 'b'] }) });
  t.equal(res.status, 200);
  t.ok(res.body.equals(body), 'the answer reaches the client as sent');
  return waitForLog(gw, String(res.headers['x-switchyard-request-id']));
}

function large(answer: object): Buffer {
  const body = Buffer.from(JSON.stringify(answer));
  if (body.length <= 4 * 1024 * 1024) throw new Error('the answer must pass the 4 MiB capture limit');
  return body;
}

t.test('usage before data in an answer over 4 MiB: read from the head, cost recorded', async (t) => {
  const record = await embeddings(t, large({ model: 'u', object: 'list', usage: USAGE, data: items() }));
  t.same(record.usage, RECORDED);
  t.equal(record.cost, COST);
});

t.test('the same gzip-compressed: read from the decoded head', async (t) => {
  const json = large({ model: 'u', object: 'list', usage: USAGE, data: items() });
  const record = await embeddings(t, gzipSync(json), 'gzip');
  t.same(record.usage, RECORDED);
  t.equal(record.cost, COST);
});

t.test('usage after data in an answer over 4 MiB: still read from the tail', async (t) => {
  const record = await embeddings(t, large({ object: 'list', data: items(), model: 'u', usage: USAGE }));
  t.same(record.usage, RECORDED);
  t.equal(record.cost, COST);
});

t.test('a "usage" nested in a member before the top-level one is passed over', async (t) => {
  const nested = { usage: { prompt_tokens: 999, total_tokens: 999 } };
  const note = '{"usage":{"prompt_tokens":999,"total_tokens":999}}';
  const record = await embeddings(t, large({ model: 'u', meta: nested, note, usage: USAGE, data: items() }));
  t.same(record.usage, RECORDED);
});

t.test('a "usage" only inside the data items is no top-level usage', async (t) => {
  const record = await embeddings(t, large({ model: 'u', object: 'list', data: items({ usage: { prompt_tokens: 999, total_tokens: 999 } }) }));
  t.same(record.usage, NONE);
  t.equal(record.cost, 0);
});
