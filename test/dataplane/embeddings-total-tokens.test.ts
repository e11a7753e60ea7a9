import t from 'tap';
import { extractUsage, extractUsageFromBytes } from '../../src/usage/index.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// Voyage-style OpenAI-compatible embeddings answers report only `usage.total_tokens`; an
// embedding has no output, so that total is the input. OpenAI-shaped answers carry both
// prompt_tokens and total_tokens, which must not be counted twice.

const NONE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
const voyageAnswer = (usage: object) => ({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model: 'u', usage });

t.test('only total_tokens: it is the input', async (t) => {
  const body = voyageAnswer({ total_tokens: 8 });
  t.same(extractUsage('embeddings', body), { ...NONE, input_tokens: 8 });
  t.same(extractUsageFromBytes('embeddings', Buffer.from(JSON.stringify(body))), { ...NONE, input_tokens: 8 }, 'same when read from the bytes');
});

t.test('prompt_tokens and total_tokens: the input once, not their sum', async (t) => {
  const body = voyageAnswer({ prompt_tokens: 8, total_tokens: 8 });
  t.same(extractUsage('embeddings', body), { ...NONE, input_tokens: 8 });
  t.same(extractUsageFromBytes('embeddings', Buffer.from(JSON.stringify(body))), { ...NONE, input_tokens: 8 }, 'same when read from the bytes');
  // The upstream's prompt count wins when both are present, whatever the total says.
  t.same(extractUsage('embeddings', voyageAnswer({ total_tokens: 9, prompt_tokens: 5 })), { ...NONE, input_tokens: 5 });
});

t.test('ch21 /v1/embeddings answered with only total_tokens: the record has the usage and its cost', async (t) => {
  const answer = JSON.stringify(voyageAnswer({ total_tokens: 8 }));
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(answer);
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch21', baseUrl: upstream.url, models: [{ external: 'emb', upstream: 'u' }], protocols: ['x-chat-embeddings'] });
  await gw.store.modelPrices.put('u', { input_per_mtok: 2, output_per_mtok: 8 }, 'manual');
  const res = await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'emb', input: 'hello there' }) });
  t.equal(res.status, 200);
  t.equal(await res.text(), answer, 'the answer reaches the client as sent');
  t.equal(upstream.requests.length, 1, 'forwarded once');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, { ...NONE, input_tokens: 8 });
  // 8 input tokens at 2 per million.
  t.equal(record.cost, 8 * 2 / 1_000_000);
});
