import t from 'tap';
import Anthropic, { APIError, AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from '@anthropic-ai/sdk';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { jsonBody, leaksKey, logOf, message, messageEvents, rig, sseText, writeJson, writeSse, writeSseThenBreak } from './helpers/vendor-wire.ts';

// The official @anthropic-ai/sdk against switchyard's messages route (ch14, native).

const ROUTE = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };

function client(url: string, apiKey: string): Anthropic {
  return new Anthropic({ apiKey, baseURL: url, maxRetries: 0 });
}

/** The gateway's reason code as the messages error shape carries it (decisions.md §6). */
function reasonOf(err: unknown): unknown {
  return ((err as APIError).error as { error?: { code?: unknown } } | undefined)?.error?.code;
}

const ASK = { max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };

t.test('non-streaming: typed Message, mapped model, upstream x-api-key, anthropic-version forwarded, usage logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, message(String(jsonBody(req)['model']), 'Bonjour.'), { 'request-id': 'req_up_1' }));
  const { data, response } = await client(r.gw.url, r.keyValue)
    .messages.create({ model: 'team-msg', ...ASK, system: 'terse' })
    .withResponse();

  t.equal(data.type, 'message');
  t.same(data.content, [{ type: 'text', text: 'Bonjour.' }]);
  t.equal(data.stop_reason, 'end_turn');
  t.equal(data.usage.input_tokens, 21);
  t.equal(response.headers.get('request-id'), 'req_up_1', 'the upstream request id header comes back');
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1/messages');
  t.match(jsonBody(seen), { model: 'vendor-msg-1', system: 'terse', max_tokens: 64 });
  t.equal(seen.headers['x-api-key'], 'sk-upstream-1', 'the upstream credential in x-api-key');
  t.equal(seen.headers.authorization, undefined);
  t.ok(seen.headers['anthropic-version'], 'the SDK anthropic-version header reaches the upstream');
  t.notOk(leaksKey(seen, r.keyValue), 'the client key never reaches the upstream');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { protocol: 'x-messages', operation: 'messages-create', status: 200, channel: 'ch14', upstream_model: 'vendor-msg-1' });
  t.match(log?.usage, { input_tokens: 21, output_tokens: 8 });
});

t.test('streaming: every event in order through the SDK iterator; usage logged from message_start and message_delta', async (t) => {
  const pieces = ['Once', ' upon', ' a', ' time'];
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, messageEvents(String(jsonBody(req)['model']), pieces, { input_tokens: 17, output_tokens: 7 })));
  const { data: stream, response } = await client(r.gw.url, r.keyValue).messages.create({ model: 'team-msg', ...ASK, stream: true }).withResponse();
  const events: RawMessageStreamEvent[] = [];
  for await (const event of stream) events.push(event);

  t.same(
    events.map((e) => e.type),
    ['message_start', 'content_block_start', ...pieces.map(() => 'content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop'],
    'every event (the ping is consumed by the SDK)',
  );
  t.same(
    events.flatMap((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? [e.delta.text] : [])),
    pieces,
    'deltas in order',
  );
  t.equal(jsonBody(r.upstream.requests[0]!)['model'], 'vendor-msg-1');
  t.equal(jsonBody(r.upstream.requests[0]!)['stream'], true);

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, error_code: null });
  t.match(log?.usage, { input_tokens: 17, output_tokens: 7 });
});

t.test('streaming through the MessageStream helper: finalMessage() and text events', async (t) => {
  const pieces = ['Hel', 'lo'];
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, messageEvents(String(jsonBody(req)['model']), pieces)));
  const stream = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', ...ASK });
  const texts: string[] = [];
  stream.on('text', (delta) => texts.push(delta));
  const final = await stream.finalMessage();
  t.same(texts, pieces);
  t.same(final.content, [{ type: 'text', text: 'Hello' }]);
  t.equal(final.usage.output_tokens, 7);
});

t.test('gateway refusals raise the typed errors; the reason code is in the messages error shape', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const completionsOnly = await r.gw.store.accessKeys.create({ name: 'completions only', protocols: ['x-completions'] });

  const wrongModel = await client(r.gw.url, r.keyValue).messages.create({ model: 'not-configured', ...ASK }).catch((e: unknown) => e);
  t.type(wrongModel, NotFoundError);
  t.equal((wrongModel as NotFoundError).type, 'not_found_error');
  t.match((wrongModel as NotFoundError).error, { type: 'error', error: { type: 'not_found_error' } });
  t.equal(reasonOf(wrongModel), 'model_not_visible');
  t.equal((wrongModel as NotFoundError).errorCode, 'model_not_visible', "the SDK's typed errorCode field carries it too");

  const notAllowed = await client(r.gw.url, completionsOnly.value).messages.create({ model: 'team-msg', ...ASK }).catch((e: unknown) => e);
  t.type(notAllowed, PermissionDeniedError);
  t.equal((notAllowed as PermissionDeniedError).type, 'permission_error');
  t.equal(reasonOf(notAllowed), 'protocol_not_allowed');
  t.equal((notAllowed as PermissionDeniedError).errorCode, 'protocol_not_allowed');

  const badKey = await client(r.gw.url, 'sk-ant-wrong').messages.create({ model: 'team-msg', ...ASK, stream: true }).catch((e: unknown) => e);
  t.type(badKey, AuthenticationError);
  t.equal((badKey as AuthenticationError).type, 'authentication_error');
  t.equal(reasonOf(badKey), 'access_key_invalid');
  t.equal((badKey as AuthenticationError).errorCode, 'access_key_invalid');
  t.equal(r.upstream.requests.length, 0);
});

t.test('upstream errors pass through: 400 BadRequestError, 429 RateLimitError with retry-after and request-id', async (t) => {
  const bad = { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' }, request_id: 'req_up_400' };
  const r400 = await rig(t, ROUTE, (_req, res) => writeJson(res, 400, bad, { 'request-id': 'req_up_400' }));
  const e400 = await client(r400.gw.url, r400.keyValue).messages.create({ model: 'team-msg', ...ASK }).catch((e: unknown) => e);
  t.type(e400, BadRequestError);
  t.same((e400 as BadRequestError).error, bad, 'the vendor error body, unchanged');
  t.equal((e400 as BadRequestError).type, 'invalid_request_error');
  t.equal((e400 as BadRequestError).requestID, 'req_up_400');

  const limited = { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' } };
  const r429 = await rig(t, ROUTE, (_req, res) => writeJson(res, 429, limited, { 'retry-after': '11', 'request-id': 'req_up_429' }));
  const e429 = await client(r429.gw.url, r429.keyValue).messages.create({ model: 'team-msg', ...ASK, stream: true }).catch((e: unknown) => e);
  t.type(e429, RateLimitError);
  t.same((e429 as RateLimitError).error, limited);
  t.equal((e429 as RateLimitError).headers?.get('retry-after'), '11');
  t.equal((e429 as RateLimitError).requestID, 'req_up_429');
});

t.test('mid-stream upstream failure: the SDK stream raises an APIError with the gateway code', async (t) => {
  for (const partial of [undefined, 'event: content_block_delta\ndata: {"type":"content_block_delta","ind']) {
    await t.test(partial === undefined ? 'break between events' : 'break inside an event', async (t) => {
      const r = await rig(t, ROUTE, (req, res) => writeSseThenBreak(res, messageEvents(String(jsonBody(req)['model']), ['Bro', 'ken', ' off']).slice(0, 5), { ...(partial === undefined ? {} : { partial }) }));
      const { data: stream, response } = await client(r.gw.url, r.keyValue).messages.create({ model: 'team-msg', ...ASK, stream: true }).withResponse();
      const texts: string[] = [];
      const err = await (async () => {
        for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') texts.push(e.delta.text);
      })().catch((e: unknown) => e);
      t.same(texts, ['Bro', 'ken']);
      t.type(err, APIError, 'the stream ends with a typed error, not silently and not hanging');
      t.equal((err as APIError).type, 'api_error');
      t.equal(reasonOf(err), 'upstream_stream_broken');
      t.equal((err as APIError).errorCode, 'upstream_stream_broken', "the SDK's errorCode, as for a refusal");
      const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
      t.match(log, { error_code: 'upstream_stream_broken' });
      t.match(log?.usage, { input_tokens: 17 }, 'the input usage seen before the break is kept');
    });
  }

  const r = await rig(t, ROUTE, (req, res) => writeSseThenBreak(res, messageEvents(String(jsonBody(req)['model']), ['a', 'b']).slice(0, 4)));
  const helper = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', ...ASK });
  const err = await helper.finalMessage().catch((e: unknown) => e);
  t.type(err, APIError, 'MessageStream.finalMessage() rejects with the typed error');
  t.equal(reasonOf(err), 'upstream_stream_broken');
  t.equal((err as APIError).errorCode, 'upstream_stream_broken');
});

t.test('mid-stream upstream silence: the SDK stream raises an APIError whose errorCode is upstream_idle_timeout', async (t) => {
  // The upstream sends the first events, then nothing, holding the connection open.
  const r = await rig(t, ROUTE, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sseText(messageEvents(String(jsonBody(req)['model']), ['still', 'there']).slice(0, 4)));
  });
  await r.gw.store.settings.save({ stream_idle_timeout_seconds: 1 });
  const helper = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', ...ASK });
  const err = await helper.finalMessage().catch((e: unknown) => e);
  t.type(err, APIError);
  t.equal((err as APIError).type, 'timeout_error');
  t.equal(reasonOf(err), 'upstream_idle_timeout');
  t.equal((err as APIError).errorCode, 'upstream_idle_timeout', "the SDK's errorCode, as for a refusal");
});
