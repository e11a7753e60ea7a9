import t from 'tap';
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { jsonBody, leaksKey, logOf, responseEvents, responseObject, rig, writeJson, writeSse, writeSseThenBreak } from './helpers/vendor-wire.ts';

// The official openai SDK (v6) against switchyard's responses route (ch09, native).

const ROUTE = { channel: 'ch09', protocols: ['x-responses'], external: 'team-resp', upstreamModel: 'vendor-resp-1' };

function client(url: string, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });
}

t.test('non-streaming: typed Response with output_text, mapped model and upstream credential, usage logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, responseObject(String(jsonBody(req)['model']), 'Responses say hello.', 'completed', { input_tokens: 31, output_tokens: 5 })));
  const { data, response } = await client(r.gw.url, r.keyValue)
    .responses.create({ model: 'team-resp', input: 'hello', instructions: 'be brief' })
    .withResponse();

  t.equal(data.object, 'response');
  t.equal(data.status, 'completed');
  t.equal(data.output_text, 'Responses say hello.', 'the SDK assembles output_text from the upstream output');
  t.equal(data.usage?.input_tokens, 31);
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1/responses');
  t.match(jsonBody(seen), { model: 'vendor-resp-1', input: 'hello', instructions: 'be brief' });
  t.equal(seen.headers.authorization, 'Bearer sk-upstream-1');
  t.notOk(leaksKey(seen, r.keyValue), 'the client key never reaches the upstream');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { protocol: 'x-responses', operation: 'responses-create', status: 200, upstream_model: 'vendor-resp-1' });
  t.match(log?.usage, { input_tokens: 31, output_tokens: 5 });
});

t.test('streaming: every event in order through the SDK iterator, usage logged from response.completed', async (t) => {
  const pieces = ['Stream', 'ing ', 'resp', 'onses'];
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, responseEvents(String(jsonBody(req)['model']), pieces, { input_tokens: 13, output_tokens: 6 })));
  const { data: stream, response } = await client(r.gw.url, r.keyValue).responses.create({ model: 'team-resp', input: 'go', stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);

  t.same(
    events.map((e) => e.type),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', ...pieces.map(() => 'response.output_text.delta'), 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'],
  );
  t.same(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
    'sequence numbers untouched',
  );
  t.same(
    events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])),
    pieces,
    'deltas in order',
  );
  const done = events.at(-1);
  t.equal(done?.type === 'response.completed' ? done.response.output_text : undefined, undefined, 'raw events carry no helper fields');
  t.equal(done?.type === 'response.completed' ? done.response.usage?.output_tokens : undefined, 6);
  t.equal(jsonBody(r.upstream.requests[0]!)['model'], 'vendor-resp-1');
  t.equal(jsonBody(r.upstream.requests[0]!)['stream_options'], undefined, 'no completions-only field added to a responses request');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, error_code: null });
  t.match(log?.usage, { input_tokens: 13, output_tokens: 6 });
});

t.test('streaming through the ResponseStream helper: finalResponse() assembles the text', async (t) => {
  const pieces = ['Helper ', 'path'];
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, responseEvents(String(jsonBody(req)['model']), pieces)));
  const stream = client(r.gw.url, r.keyValue).responses.stream({ model: 'team-resp', input: 'go' });
  const deltas: string[] = [];
  stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
  const final = await stream.finalResponse();
  t.same(deltas, pieces);
  t.equal(final.output_text, 'Helper path');
});

t.test('gateway refusals raise the typed errors with the reason code', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const completionsOnly = await r.gw.store.accessKeys.create({ name: 'completions only', protocols: ['x-completions'] });

  const wrongModel = await client(r.gw.url, r.keyValue).responses.create({ model: 'not-configured', input: 'x' }).catch((e: unknown) => e);
  t.type(wrongModel, NotFoundError);
  t.equal((wrongModel as NotFoundError).code, 'model_not_visible');

  const notAllowed = await client(r.gw.url, completionsOnly.value).responses.create({ model: 'team-resp', input: 'x' }).catch((e: unknown) => e);
  t.type(notAllowed, PermissionDeniedError);
  t.equal((notAllowed as PermissionDeniedError).code, 'protocol_not_allowed');

  const badKey = await client(r.gw.url, 'sk-wrong').responses.create({ model: 'team-resp', input: 'x', stream: true }).catch((e: unknown) => e);
  t.type(badKey, AuthenticationError, 'a refused streaming request raises before any stream exists');
  t.equal((badKey as AuthenticationError).code, 'access_key_invalid');
  t.equal(r.upstream.requests.length, 0);
});

t.test('upstream errors pass through: 400 BadRequestError and 429 RateLimitError with retry-after', async (t) => {
  const bad = { error: { message: "Unsupported parameter: 'temperature' is not supported with this model.", type: 'invalid_request_error', param: 'temperature', code: 'unsupported_parameter' } };
  const r400 = await rig(t, ROUTE, (_req, res) => writeJson(res, 400, bad));
  const e400 = await client(r400.gw.url, r400.keyValue).responses.create({ model: 'team-resp', input: 'x', temperature: 1 }).catch((e: unknown) => e);
  t.type(e400, BadRequestError);
  t.same((e400 as BadRequestError).error, bad.error);
  t.equal((e400 as BadRequestError).code, 'unsupported_parameter');

  const limited = { error: { message: 'Rate limit reached.', type: 'tokens', param: null, code: 'rate_limit_exceeded' } };
  const r429 = await rig(t, ROUTE, (_req, res) => writeJson(res, 429, limited, { 'retry-after': '3' }));
  const e429 = await client(r429.gw.url, r429.keyValue).responses.create({ model: 'team-resp', input: 'x', stream: true }).catch((e: unknown) => e);
  t.type(e429, RateLimitError);
  t.same((e429 as RateLimitError).error, limited.error);
  t.equal((e429 as RateLimitError).headers?.get('retry-after'), '3');
});

t.test('mid-stream upstream failure ends the stream with an error, not a hang', async (t) => {
  const upstreamEvents = (model: string) => responseEvents(model, ['Half', ' way', ' lost']);
  const r = await rig(t, ROUTE, (req, res) => writeSseThenBreak(res, upstreamEvents(String(jsonBody(req)['model'])).slice(0, 6)));

  const { data: stream, response } = await client(r.gw.url, r.keyValue).responses.create({ model: 'team-resp', input: 'x', stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  t.same(
    events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])),
    ['Half', ' way'],
  );
  const last = events.at(-1);
  t.equal(last?.type, 'error', 'the raw stream ends with the protocol error event (ResponseErrorEvent)');
  t.match(last, { type: 'error', code: 'upstream_stream_broken' });
  t.equal(last?.sequence_number, events.at(-2)!.sequence_number + 1, 'the error event continues the sequence numbers');
  t.notOk(events.some((e) => e.type === 'response.completed'));
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { error_code: 'upstream_stream_broken' });

  // The helper, which needs a terminal response, rejects instead of waiting forever.
  const r2 = await rig(t, ROUTE, (req, res) => writeSseThenBreak(res, upstreamEvents(String(jsonBody(req)['model'])).slice(0, 6)));
  const helper = client(r2.gw.url, r2.keyValue).responses.stream({ model: 'team-resp', input: 'x' });
  const rejected = await helper.finalResponse().then(
    () => false,
    (e: unknown) => e,
  );
  // The helper emits the stream's `error` event as its error, the way it does for the vendor.
  t.match(rejected, { type: 'error', code: 'upstream_stream_broken' }, 'finalResponse() rejects with the error event');
});
