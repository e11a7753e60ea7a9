import t, { type Test } from 'tap';
import { computeCost, type ModelPrice } from '../../src/usage/index.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { pricedRequest, usd } from './helpers/priced-request.ts';
import { clientAuthHeaders, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';

// Tokens written to a prompt cache are priced at the model's cache write price, through the
// real data plane: the record's cost is the sum at each of the four rates.

const UNCACHED = 5_000;
const READ = 20_000;
const WRITTEN = 3_000;
const OUTPUT = 900;

const ALL_RATES: ModelPrice = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 };

/** The cost as the vendor bills it, to 1e-10 USD as records keep it. */
function expectedCost(price: ModelPrice): number {
  const writePrice = price.cache_write_per_mtok ?? price.input_per_mtok;
  return usd([UNCACHED, price.input_per_mtok], [READ, price.cached_input_per_mtok!], [WRITTEN, writePrice], [OUTPUT, price.output_per_mtok]);
}

const messagesUsage = { input_tokens: UNCACHED, cache_read_input_tokens: READ, cache_creation_input_tokens: WRITTEN };

const MESSAGES_BODY = JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { ...messagesUsage, output_tokens: OUTPUT } });

const MESSAGES_STREAM = [
  `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_2', type: 'message', role: 'assistant', content: [], usage: { ...messagesUsage, output_tokens: 1 } } })}\n\n`,
  `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } })}\n\n`,
  `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: OUTPUT } })}\n\n`,
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('');

/** One messages request to a ch14 Group whose model has `price`; its log record. */
function messagesRequest(t: Test, price: ModelPrice, stream: boolean) {
  const body = JSON.stringify({ model: 'team-m', max_tokens: 10, messages: [], ...(stream ? { stream: true } : {}) });
  return pricedRequest(t, { channel: 'ch14', protocol: 'x-messages', path: '/v1/messages', price, reply: stream ? MESSAGES_STREAM : MESSAGES_BODY, contentType: stream ? 'text/event-stream' : 'application/json', body, headers: { 'content-type': 'application/json' } });
}

for (const stream of [false, true]) {
  const kind = stream ? 'stream' : 'body';

  t.test(`messages ${kind}: cache writes at the write price, reads at the cached price, the rest at the input price`, async (t) => {
    const record = await messagesRequest(t, ALL_RATES, stream);
    t.equal(record.cost, expectedCost(ALL_RATES));
    t.ok(record.cost > expectedCost({ ...ALL_RATES, cache_write_per_mtok: undefined }), 'more than with writes at the input price');
    // The record keeps its four counters: writes count as input, their count is not stored.
    t.same(record.usage, { input_tokens: UNCACHED + READ + WRITTEN, output_tokens: OUTPUT, cached_tokens: READ, reasoning_tokens: 0 });
  });

  t.test(`messages ${kind}: without a write price, writes are priced as input`, async (t) => {
    const { cache_write_per_mtok: _, ...price } = ALL_RATES;
    const record = await messagesRequest(t, price, stream);
    t.equal(record.cost, expectedCost(price));
    t.equal(record.cost, usd([UNCACHED + WRITTEN, 3], [READ, 0.3], [OUTPUT, 15]));
  });
}

const prompt = UNCACHED + READ + WRITTEN;
const openRouterUsage = { prompt_tokens: prompt, completion_tokens: OUTPUT, total_tokens: prompt + OUTPUT, prompt_tokens_details: { cached_tokens: READ, cache_write_tokens: WRITTEN } };

const COMPLETIONS_BODY = JSON.stringify({ id: 'gen-1', object: 'chat.completion', choices: [], usage: openRouterUsage });

// The usage chunk's bytes are read without JSON.parse (scanUsageEvent): the nested write count too.
const COMPLETIONS_STREAM = [
  `data: ${JSON.stringify({ id: 'gen-2', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] })}\n\n`,
  `data: ${JSON.stringify({ id: 'gen-2', object: 'chat.completion.chunk', choices: [], usage: openRouterUsage })}\n\n`,
  'data: [DONE]\n\n',
].join('');

for (const stream of [false, true]) {
  t.test(`completions ${stream ? 'stream' : 'body'}: OpenRouter's prompt_tokens_details.cache_write_tokens is priced at the write price`, async (t) => {
    const body = JSON.stringify({ model: 'team-m', messages: [], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
    const record = await pricedRequest(t, { channel: 'ch02', protocol: 'x-completions', path: '/v1/chat/completions', price: ALL_RATES, reply: stream ? COMPLETIONS_STREAM : COMPLETIONS_BODY, contentType: stream ? 'text/event-stream' : 'application/json', body, headers: { 'content-type': 'application/json' } });
    t.equal(record.cost, expectedCost(ALL_RATES));
  });
}

// Alibaba Model Studio's explicit cache (OpenAI-compatible chat): writes in
// prompt_tokens_details.cache_creation_input_tokens, beside a cache_creation breakdown object
// (alibabacloud.com/help/en/model-studio/context-cache). Reads and writes go in separate requests
// there; both at once here, as the formula allows.
const dashScopeUsage = {
  prompt_tokens: prompt,
  completion_tokens: OUTPUT,
  total_tokens: prompt + OUTPUT,
  prompt_tokens_details: { text_tokens: prompt, cached_tokens: READ, cache_creation: { ephemeral_5m_input_tokens: WRITTEN }, cache_creation_input_tokens: WRITTEN, cache_type: 'ephemeral' },
};

for (const stream of [false, true]) {
  t.test(`completions ${stream ? 'stream' : 'body'}: DashScope's prompt_tokens_details.cache_creation_input_tokens is priced at the write price`, async (t) => {
    const reply = stream
      ? [
          `data: ${JSON.stringify({ id: 'chatcmpl-3', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`,
          `data: ${JSON.stringify({ id: 'chatcmpl-3', object: 'chat.completion.chunk', choices: [], usage: dashScopeUsage })}\n\n`,
          'data: [DONE]\n\n',
        ].join('')
      : JSON.stringify({ id: 'chatcmpl-3', object: 'chat.completion', choices: [], usage: dashScopeUsage });
    const body = JSON.stringify({ model: 'team-m', messages: [], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
    const record = await pricedRequest(t, { channel: 'ch19', protocol: 'x-completions', path: '/v1/chat/completions', price: ALL_RATES, reply, contentType: stream ? 'text/event-stream' : 'application/json', body, headers: { 'content-type': 'application/json' } });
    t.equal(record.cost, expectedCost(ALL_RATES));
    t.same(record.usage, { input_tokens: prompt, output_tokens: OUTPUT, cached_tokens: READ, reasoning_tokens: 0 });
  });
}

// OpenAI's Responses API: writes in input_tokens_details.cache_write_tokens, beside the reads
// (GPT-5.6 and later bill them at 1.25x input; developers.openai.com/api/docs/guides/prompt-caching).
const responsesUsage = { input_tokens: prompt, input_tokens_details: { cached_tokens: READ, cache_write_tokens: WRITTEN }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: prompt + OUTPUT };
const response = { id: 'resp_1', object: 'response', status: 'completed', output: [], usage: responsesUsage };

for (const stream of [false, true]) {
  t.test(`responses ${stream ? 'stream' : 'body'}: input_tokens_details.cache_write_tokens is priced at the write price`, async (t) => {
    const reply = stream
      ? [
          `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', usage: null } })}\n\n`,
          `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response })}\n\n`,
        ].join('')
      : JSON.stringify(response);
    const body = JSON.stringify({ model: 'team-m', input: 'hi', ...(stream ? { stream: true } : {}) });
    const record = await pricedRequest(t, { channel: 'ch09', protocol: 'x-responses', path: '/v1/responses', price: ALL_RATES, reply, contentType: stream ? 'text/event-stream' : 'application/json', body, headers: { 'content-type': 'application/json' } });
    t.equal(record.cost, expectedCost(ALL_RATES));
    t.same(record.usage, { input_tokens: prompt, output_tokens: OUTPUT, cached_tokens: READ, reasoning_tokens: 0 });
  });
}

t.test('computeCost: reads and writes together never exceed the input', async (t) => {
  const price = { input_per_mtok: 1, output_per_mtok: 0, cached_input_per_mtok: 10, cache_write_per_mtok: 100 };
  // 600 read and 600 written of 1000 input: the reads are taken first, the writes are what remains.
  const usage = { input_tokens: 1000, output_tokens: 0, cached_tokens: 600, reasoning_tokens: 0, cache_write_tokens: 600 };
  t.equal(computeCost(usage, price), (600 * 10 + 400 * 100) / 1e6);
  t.equal(computeCost({ ...usage, cached_tokens: 0, cache_write_tokens: 5000 }, price), (1000 * 100) / 1e6, 'writes alone are clamped to the input');
  t.equal(computeCost({ ...usage, cache_write_tokens: undefined }, price), (600 * 10 + 400 * 1) / 1e6, 'no write count: the rest is input');
});

t.test('a server with the memory log store records the same four counters: the write count is not stored there either', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(MESSAGES_BODY);
  });
  t.teardown(() => upstream.close());
  // No openLogStore: createServer keeps records in a MemoryLogStore.
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  await seedGroup(gw.server.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-cache'] });
  const { keyValue } = await createKey(gw.server.store, { protocols: ['x-messages'] });
  await gw.server.store.modelPrices.put('vendor-m', ALL_RATES, 'manual');
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { ...clientAuthHeaders('x-messages', keyValue), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team-m', max_tokens: 10, messages: [] }),
  });
  t.equal(res.status, 200);
  const requestId = res.headers.get('x-switchyard-request-id');
  const record = ((await gw.api('GET', `/api/logs/${requestId}`)).json as { data: { usage: unknown; cost: number } }).data;
  t.equal(record.cost, expectedCost(ALL_RATES), 'priced with the write price');
  t.same(record.usage, { input_tokens: UNCACHED + READ + WRITTEN, output_tokens: OUTPUT, cached_tokens: READ, reasoning_tokens: 0 });
});
