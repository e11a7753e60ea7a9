import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// Completions usage as xAI, Moonshot and DeepSeek report it, through the real data plane.

const PRICE = { input_per_mtok: 0.2, cached_input_per_mtok: 0.05, output_per_mtok: 0.5 };

/** The cost of a usage at PRICE, computed here from the counts. */
function costOf(input: number, cached: number, output: number): number {
  return ((input - cached) * PRICE.input_per_mtok + cached * PRICE.cached_input_per_mtok + output * PRICE.output_per_mtok) / 1_000_000;
}

async function complete(t: Test, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void, stream: boolean) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch20', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  await gw.store.modelPrices.put('vendor-chat', PRICE, 'manual');
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  return { res, text, record };
}

function answer(usage: object) {
  return (_req: RecordedUpstreamRequest, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage }));
  };
}

function streamOf(chunks: object[]) {
  return (_req: RecordedUpstreamRequest, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const chunk of chunks) res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...chunk })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

function near(t: Test, actual: number, expected: number, message: string) {
  t.ok(Math.abs(actual - expected) < 1e-12, `${message}: ${actual} vs ${expected}`);
}

// Google Vertex's Grok page: reasoning outside completion_tokens, total = prompt + completion + reasoning.
const xaiUsage = { prompt_tokens: 663, completion_tokens: 50, total_tokens: 837, prompt_tokens_details: { cached_tokens: 654, text_tokens: 663 }, completion_tokens_details: { reasoning_tokens: 124, accepted_prediction_tokens: 0 } };

function expectXai(t: Test, record: { usage: unknown; cost: number }) {
  const u = xaiUsage;
  t.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens + u.completion_tokens_details.reasoning_tokens, 'the fixture is xAI-shaped');
  const output = u.completion_tokens + u.completion_tokens_details.reasoning_tokens;
  t.same(record.usage, { input_tokens: u.prompt_tokens, output_tokens: output, cached_tokens: u.prompt_tokens_details.cached_tokens, reasoning_tokens: u.completion_tokens_details.reasoning_tokens });
  near(t, record.cost, costOf(u.prompt_tokens, u.prompt_tokens_details.cached_tokens, output), 'cost counts the reasoning as output');
}

t.test('xAI answer: reasoning outside completion_tokens counts as output', async (t) => {
  const { res, record } = await complete(t, answer(xaiUsage), false);
  t.equal(res.status, 200);
  expectXai(t, record);
});

t.test('xAI stream: the same from its usage chunks', async (t) => {
  const early = { ...xaiUsage, completion_tokens: 1, total_tokens: 663 + 1 + 124 };
  const { res, record } = await complete(t, streamOf([
    { choices: [{ index: 0, delta: { role: 'assistant', content: 'I am' } }], usage: early },
    { choices: [{ index: 0, delta: { content: ' Grok' }, finish_reason: 'stop' }], usage: xaiUsage },
    { choices: [], usage: xaiUsage },
  ]), true);
  t.equal(res.status, 200);
  expectXai(t, record);
});

t.test('OpenAI answer: reasoning inside completion_tokens (total = prompt + completion) is not added again', async (t) => {
  const usage = { prompt_tokens: 100, completion_tokens: 80, total_tokens: 180, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 30 } };
  const { record } = await complete(t, answer(usage), false);
  t.same(record.usage, { input_tokens: 100, output_tokens: usage.completion_tokens, cached_tokens: 40, reasoning_tokens: 30 });
  near(t, record.cost, costOf(100, 40, usage.completion_tokens), 'cost');
  const { record: streamed } = await complete(t, streamOf([{ choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }] }, { choices: [], usage }]), true);
  t.same(streamed.usage, record.usage, 'streamed too');
});

t.test('Moonshot answer: top-level cached_tokens counts as cached input', async (t) => {
  const usage = { prompt_tokens: 10_000, completion_tokens: 2, total_tokens: 10_002, cached_tokens: 9000 };
  const { record } = await complete(t, answer(usage), false);
  t.same(record.usage, { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, cached_tokens: usage.cached_tokens, reasoning_tokens: 0 });
  near(t, record.cost, costOf(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens), 'cached input at the cached price');
});

t.test('Moonshot stream: usage in the last chunk\'s choices[0].usage is recorded, and the chunk passed on', async (t) => {
  const usage = { prompt_tokens: 39, completion_tokens: 211, total_tokens: 250, cached_tokens: 30 };
  const { res, text, record } = await complete(t, streamOf([
    { choices: [{ index: 0, delta: { content: '。' }, finish_reason: null }], system_fingerprint: 'fp' },
    { choices: [{ index: 0, delta: {}, finish_reason: 'stop', usage }], system_fingerprint: 'fp' },
  ]), true);
  t.equal(res.status, 200);
  t.match(text, '"finish_reason":"stop","usage":{"prompt_tokens":39', 'the client gets the chunk');
  t.same(record.usage, { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, cached_tokens: usage.cached_tokens, reasoning_tokens: 0 });
  near(t, record.cost, costOf(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens), 'cost');
});

t.test('a chunk with both a top-level usage and a choices[0].usage: the top-level one counts', async (t) => {
  const top = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };
  const nested = { prompt_tokens: 39, completion_tokens: 211, total_tokens: 250 };
  const expected = { input_tokens: top.prompt_tokens, output_tokens: top.completion_tokens, cached_tokens: 0, reasoning_tokens: 0 };
  const { record } = await complete(t, streamOf([{ choices: [{ index: 0, delta: {}, finish_reason: 'stop', usage: nested }], usage: top }]), true);
  t.same(record.usage, expected, 'choices first');
  // Top-level usage first, and an escaped key that leaves the chunk to JSON.parse.
  const { record: parsed } = await complete(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: {"usage":${JSON.stringify(top)},"\\u0069d":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":${JSON.stringify(nested)}}]}\n\n`);
    res.end('data: [DONE]\n\n');
  }, true);
  t.same(parsed.usage, expected, 'usage first, chunk parsed');
  // A top-level usage of null is no usage: the choices one counts then.
  const { record: nullTop } = await complete(t, streamOf([{ choices: [{ index: 0, delta: {}, finish_reason: 'stop', usage: nested }], usage: null }]), true);
  t.same(nullTop.usage, { input_tokens: nested.prompt_tokens, output_tokens: nested.completion_tokens, cached_tokens: 0, reasoning_tokens: 0 }, 'top-level null');
});

t.test('DeepSeek answer: prompt_cache_hit_tokens when prompt_tokens_details.cached_tokens is absent', async (t) => {
  const usage = { prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_cache_hit_tokens: 600, prompt_cache_miss_tokens: 400 };
  const { record } = await complete(t, answer(usage), false);
  t.same(record.usage, { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, cached_tokens: usage.prompt_cache_hit_tokens, reasoning_tokens: 0 });
  near(t, record.cost, costOf(usage.prompt_tokens, usage.prompt_cache_hit_tokens, usage.completion_tokens), 'cost');
  const both = { ...usage, prompt_tokens_details: { cached_tokens: 500 } };
  const { record: withDetails } = await complete(t, answer(both), false);
  t.equal(withDetails.usage.cached_tokens, both.prompt_tokens_details.cached_tokens, 'prompt_tokens_details.cached_tokens first, never both');
});
