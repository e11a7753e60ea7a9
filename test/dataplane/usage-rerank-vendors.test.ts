import t from 'tap';
import { pricedRequest, usd } from './helpers/priced-request.ts';

// Rerank usage as each vendor answers it, through the real data plane (ch21, a channel of note 5).

const PRICE = { input_per_mtok: 0.02, output_per_mtok: 0 };
const results = [{ index: 1, relevance_score: 0.9 }, { index: 0, relevance_score: 0.1 }];
const BODY = JSON.stringify({ model: 'team-m', query: 'apple', documents: ['banana', 'apple'] });

function rerank(t: Parameters<typeof pricedRequest>[0], answer: object) {
  return pricedRequest(t, { channel: 'ch21', protocol: 'rerank', path: '/v1/rerank', price: PRICE, reply: JSON.stringify(answer), body: BODY, headers: { 'content-type': 'application/json' } });
}

const cases: Array<[string, object, number]> = [
  // docs.siliconflow.com/en/api-reference/rerank/create-rerank: a top-level `tokens`, no `usage`.
  ['SiliconFlow: top-level tokens.input_tokens', { id: 'rr-1', results, tokens: { input_tokens: 1234, output_tokens: 0 } }, 1234],
  // Its earlier answers, and Cohere-style /v1/rerank servers: `meta.tokens`.
  ['meta.tokens.input_tokens', { id: 'rr-2', results, meta: { billed_units: { input_tokens: 321, search_units: 0 }, tokens: { input_tokens: 321, output_tokens: 0 } } }, 321],
  // Jina and Voyage: `usage.total_tokens`, which wins over anything else.
  ['Jina: usage.total_tokens', { model: 'm', results, usage: { total_tokens: 815 } }, 815],
  ['usage beside tokens: usage counts', { id: 'rr-3', results, usage: { total_tokens: 50 }, tokens: { input_tokens: 70, output_tokens: 0 } }, 50],
];

for (const [name, answer, input] of cases) {
  t.test(name, async (t) => {
    const record = await rerank(t, answer);
    t.same(record.usage, { input_tokens: input, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
    t.equal(record.cost, usd([input, PRICE.input_per_mtok]));
  });
}

t.test('Cohere: billed search units are no tokens, and none are counted', async (t) => {
  const record = await rerank(t, { id: 'rr-4', results, meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } } });
  t.same(record.usage, { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
  t.equal(record.cost, 0);
});
