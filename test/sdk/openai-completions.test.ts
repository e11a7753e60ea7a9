import t from 'tap';
import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { chatChunks, chatCompletion, jsonBody, leaksKey, logOf, rig, writeJson, writeSse, writeSseThenBreak } from './helpers/vendor-wire.ts';

// The official openai SDK (v6) against switchyard's chat completions route (ch02, native).

const ROUTE = { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' };

function client(url: string, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });
}

t.test('non-streaming: typed ChatCompletion, mapped model and upstream credential upstream, usage logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), 'Hello from upstream.')));
  const { data, response } = await client(r.gw.url, r.keyValue)
    .chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2 })
    .withResponse();

  t.equal(data.object, 'chat.completion');
  t.equal(data.choices[0]?.message.content, 'Hello from upstream.');
  t.equal(data.choices[0]?.finish_reason, 'stop');
  t.equal(data.usage?.prompt_tokens, 11);
  t.equal(r.upstream.requests.length, 1);
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1/chat/completions');
  t.equal(jsonBody(seen)['model'], 'vendor-chat-1', 'the upstream gets the mapped model');
  t.equal(jsonBody(seen)['temperature'], 0.2);
  t.equal(seen.headers.authorization, 'Bearer sk-upstream-1', 'the upstream gets the upstream credential');
  t.notOk(leaksKey(seen, r.keyValue), 'the client key never reaches the upstream');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { access_key_id: r.keyId, protocol: 'x-completions', status: 200, external_model: 'team-chat', upstream_model: 'vendor-chat-1' });
  t.match(log?.usage, { input_tokens: 11, output_tokens: 4 });
});

t.test('streaming without stream_options: usage requested upstream, the usage-only chunk withheld, deltas in order', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    const includeUsage = (body['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage === true;
    await writeSse(res, chatChunks(String(body['model']), ['Alpha', ' beta', ' gamma', '.'], includeUsage));
  });
  const { data: stream, response } = await client(r.gw.url, r.keyValue)
    .chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'count' }], stream: true })
    .withResponse();
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);

  t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Alpha beta gamma.');
  t.same(
    chunks.map((c) => c.choices[0]?.delta.content).filter((c) => c !== undefined && c !== ''),
    ['Alpha', ' beta', ' gamma', '.'],
    'every delta, in order',
  );
  t.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'stop');
  t.notOk(chunks.some((c) => c.choices.length === 0 && c.usage), 'the SDK sees no usage-only chunk the client did not ask for');
  t.notOk(chunks.some((c) => c.usage), 'no usage anywhere in what the client got');
  const sent = jsonBody(r.upstream.requests[0]!);
  t.same(sent['stream_options'], { include_usage: true }, 'the gateway asked the upstream for usage');
  t.equal(sent['model'], 'vendor-chat-1');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, error_code: null });
  t.match(log?.usage, { input_tokens: 9, output_tokens: 5 }, 'usage read from the withheld chunk');
});

t.test('streaming with include_usage: false: the gateway still asks upstream, the client gets no usage chunk', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    await writeSse(res, chatChunks(String(body['model']), ['No', ' usage'], (body['stream_options'] as { include_usage?: boolean })?.include_usage === true));
  });
  const { data: stream, response } = await client(r.gw.url, r.keyValue)
    .chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: false } })
    .withResponse();
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'No usage');
  t.notOk(chunks.some((c) => c.choices.length === 0), 'no usage-only chunk');
  t.same(jsonBody(r.upstream.requests[0]!)['stream_options'], { include_usage: true });
  t.match((await logOf(r.gw, response.headers.get('x-switchyard-request-id')))?.usage, { input_tokens: 9, output_tokens: 5 });
});

t.test('streaming through the ChatCompletionStream helper: finalChatCompletion() assembles the message', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    await writeSse(res, chatChunks(String(body['model']), ['Hel', 'per'], (body['stream_options'] as { include_usage?: boolean })?.include_usage === true));
  });
  const stream = client(r.gw.url, r.keyValue).chat.completions.stream({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] });
  const deltas: string[] = [];
  stream.on('content', (delta) => deltas.push(delta));
  const final = await stream.finalChatCompletion();
  t.same(deltas, ['Hel', 'per']);
  t.equal(final.choices[0]?.message.content, 'Helper');
  t.equal(final.choices[0]?.finish_reason, 'stop');
});

t.test('streaming with include_usage: the client gets the usage chunk', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    await writeSse(res, chatChunks(String(body['model']), ['One', ' two'], (body['stream_options'] as { include_usage?: boolean })?.include_usage === true));
  });
  const { data: stream, response } = await client(r.gw.url, r.keyValue)
    .chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } })
    .withResponse();
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);

  t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'One two');
  const last = chunks.at(-1);
  t.same(last?.choices, [], 'the last chunk is the usage chunk');
  t.match(last?.usage, { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 });
  t.same(jsonBody(r.upstream.requests[0]!)['stream_options'], { include_usage: true });
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log?.usage, { input_tokens: 9, output_tokens: 5 });
});

t.test('gateway refusals raise the typed errors with the reason code', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const messagesOnly = await r.gw.store.accessKeys.create({ name: 'messages only', protocols: ['x-messages'] });

  const wrongModel = await client(r.gw.url, r.keyValue).chat.completions.create({ model: 'not-configured', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(wrongModel, NotFoundError);
  t.equal((wrongModel as NotFoundError).status, 404);
  t.equal((wrongModel as NotFoundError).code, 'model_not_visible');
  t.ok((wrongModel as NotFoundError).requestID, 'the gateway request id is on the error');

  const notAllowed = await client(r.gw.url, messagesOnly.value).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(notAllowed, PermissionDeniedError);
  t.equal((notAllowed as PermissionDeniedError).code, 'protocol_not_allowed');

  const badKey = await client(r.gw.url, 'sk-not-a-key').chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(badKey, AuthenticationError);
  t.equal((badKey as AuthenticationError).code, 'access_key_invalid');

  t.equal(r.upstream.requests.length, 0, 'no refusal reached the upstream');
  const log = await logOf(r.gw, (wrongModel as APIError).requestID);
  t.match(log, { status: 404, error_code: 'model_not_visible' });
});

t.test('an upstream 400 comes back as the upstream sent it: BadRequestError with the vendor code', async (t) => {
  const vendorError = { error: { message: "Invalid value for 'temperature': must be <= 2.", type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' } };
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 400, vendorError, { 'x-vendor-trace': 'tr-1' }));
  const err = await client(r.gw.url, r.keyValue).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], temperature: 9 }).catch((e: unknown) => e);
  t.type(err, BadRequestError);
  const e = err as BadRequestError;
  t.equal(e.status, 400);
  t.same(e.error, vendorError.error, 'the vendor error body, unchanged');
  t.equal(e.code, 'invalid_value');
  t.equal(e.param, 'temperature');
  t.equal(e.headers?.get('x-vendor-trace'), 'tr-1');
  const log = await logOf(r.gw, e.requestID);
  t.match(log, { status: 400, error_code: 'upstream_400' });
});

t.test('an upstream 429 with retry-after raises RateLimitError and keeps retry-after', async (t) => {
  const vendorError = { error: { message: 'Rate limit reached for requests.', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 429, vendorError, { 'retry-after': '7' }));
  const err = await client(r.gw.url, r.keyValue).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(err, RateLimitError);
  const e = err as RateLimitError;
  t.equal(e.status, 429);
  t.same(e.error, vendorError.error);
  t.equal(e.code, 'rate_limit_exceeded');
  t.equal(e.headers?.get('retry-after'), '7');
});

t.test('mid-stream upstream failure: the SDK stream ends with an APIError carrying the gateway code', async (t) => {
  for (const includeUsage of [false, true]) {
    await t.test(`client include_usage=${includeUsage}`, async (t) => {
      const r = await rig(t, ROUTE, async (req, res) => {
        const frames = chatChunks(String(jsonBody(req)['model']), ['Part one', ' part two', ' never sent'], true);
        await writeSseThenBreak(res, frames.slice(0, 3));
      });
      const { data: stream, response } = await client(r.gw.url, r.keyValue)
        .chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) })
        .withResponse();
      const deltas: string[] = [];
      const err = await (async () => {
        for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
      })().catch((e: unknown) => e);
      t.same(deltas.filter(Boolean), ['Part one', ' part two'], 'the deltas sent before the break arrive');
      t.type(err, APIError, 'the stream ends with an error, not silently and not hanging');
      t.equal((err as APIError).code, 'upstream_stream_broken');
      const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
      t.match(log, { error_code: 'upstream_stream_broken' });
    });
  }
});

t.test('mid-event upstream failure: the partial event is not merged into the error event', async (t) => {
  for (const includeUsage of [false, true]) {
    await t.test(`client include_usage=${includeUsage}`, async (t) => {
      const r = await rig(t, ROUTE, async (req, res) => {
        const frames = chatChunks(String(jsonBody(req)['model']), ['Part one', ' part two'], true);
        await writeSseThenBreak(res, frames.slice(0, 2), { partial: 'data: {"id":"chatcmpl-up-2","object":"chat.comp' });
      });
      const stream = await client(r.gw.url, r.keyValue).chat.completions.create({
        model: 'team-chat',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      const deltas: string[] = [];
      const err = await (async () => {
        for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
      })().catch((e: unknown) => e);
      t.same(deltas.filter(Boolean), ['Part one']);
      t.type(err, APIError, 'a typed APIError, not a JSON SyntaxError from a half event');
      t.equal((err as APIError).code, 'upstream_stream_broken');
    });
  }
});
