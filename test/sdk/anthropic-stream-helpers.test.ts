import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { jsonBody, logOf, messageEvents, rig, writeJson, writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// The @anthropic-ai/sdk helpers (messages.stream(), finalMessage(), tool use, countTokens) against ch14, native.

const ROUTE = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };

function client(url: string, apiKey: string): Anthropic {
  return new Anthropic({ apiKey, baseURL: url, maxRetries: 0 });
}

/** A text block then a tool_use block whose input streams as input_json_delta fragments. */
function toolUseEvents(model: string, args: readonly string[]): SseFrame[] {
  const bodies: Record<string, unknown>[] = [
    {
      type: 'message_start',
      message: { id: 'msg_up_tool', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 2, service_tier: 'standard' } },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me check.' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_up_1', name: 'get_weather', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
    ...args.map((partial_json) => ({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json } })),
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } },
    { type: 'message_stop' },
  ];
  return bodies.map((b) => ({ event: b['type'] as string, data: b }));
}

const TOOL = { name: 'get_weather', description: 'weather', input_schema: { type: 'object' as const, properties: { location: { type: 'string' } } } };

t.test('messages.stream(): text via on(text), finalMessage() equals the transcript, usage logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, messageEvents(String(jsonBody(req)['model']), ['Hel', 'lo', '!'], { input_tokens: 25, output_tokens: 9 })));
  const stream = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  const texts: string[] = [];
  stream.on('text', (d) => texts.push(d));
  const final = await stream.finalMessage();
  t.same(texts, ['Hel', 'lo', '!']);
  t.same(final.content, [{ type: 'text', text: 'Hello!' }]);
  t.equal(final.stop_reason, 'end_turn');
  t.match(final.usage, { input_tokens: 25, output_tokens: 9 });
  const { response } = await stream.withResponse();
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log?.usage, { input_tokens: 25, output_tokens: 9 });
  t.equal(stream.request_id, response.headers.get('request-id') ?? response.headers.get('x-switchyard-request-id') ?? null);
});

t.test('messages.stream(): tool use with partial JSON; finalMessage() has the parsed input; usage with cache reads logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, toolUseEvents(String(jsonBody(req)['model']), ['{"location":', ' "San Fra', 'ncisco, CA"}'])));
  const stream = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', max_tokens: 256, tools: [TOOL], messages: [{ role: 'user', content: 'weather in SF?' }] });
  const partials: string[] = [];
  stream.on('inputJson', (partial) => partials.push(partial));
  const final = await stream.finalMessage();
  t.same(partials.filter(Boolean), ['{"location":', ' "San Fra', 'ncisco, CA"}']);
  t.match(final.content, [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_up_1', name: 'get_weather', input: { location: 'San Francisco, CA' } }]);
  t.equal(final.stop_reason, 'tool_use');
  t.match(final.usage, { input_tokens: 472, output_tokens: 89, cache_read_input_tokens: 100 });
  const { response } = await stream.withResponse();
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  // The record's input counts the cache reads too (input_tokens + cache_read_input_tokens).
  t.match(log?.usage, { input_tokens: 572, cached_tokens: 100, output_tokens: 89 });
});

t.test('messages.stream(): a message_delta whose usage grew (server tools) is what finalMessage() and the log report', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => {
    const frames = messageEvents(String(jsonBody(req)['model']), ['Found it.'], { input_tokens: 2679, output_tokens: 5 });
    const delta = frames.find((f) => f.event === 'message_delta')!;
    (delta.data as Record<string, unknown>)['usage'] = { input_tokens: 10682, cache_creation_input_tokens: 0, cache_read_input_tokens: 300, output_tokens: 510, server_tool_use: { web_search_requests: 1 } };
    return writeSse(res, frames);
  });
  const stream = client(r.gw.url, r.keyValue).messages.stream({ model: 'team-msg', max_tokens: 600, messages: [{ role: 'user', content: 'search' }] });
  const final = await stream.finalMessage();
  t.match(final.usage, { input_tokens: 10682, cache_read_input_tokens: 300, output_tokens: 510 });
  const { response } = await stream.withResponse();
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log?.usage, { input_tokens: 10982, cached_tokens: 300, output_tokens: 510 }, 'the latest counts, not message_start\'s');
});

t.test('messages.countTokens: forwarded with the mapped model; the answer as sent', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, { input_tokens: 14 }));
  const { data, response } = await client(r.gw.url, r.keyValue).messages.countTokens({ model: 'team-msg', messages: [{ role: 'user', content: 'count me' }], tools: [TOOL] }).withResponse();
  t.same(data, { input_tokens: 14 });
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1/messages/count_tokens');
  t.match(jsonBody(seen), { model: 'vendor-msg-1', messages: [{ role: 'user', content: 'count me' }] });
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, operation: 'messages-count-tokens' });
});

t.test('messages.create(...).asResponse(): raw response with the gateway request id', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, messageEvents(String(jsonBody(req)['model']), ['x'])));
  const raw = await client(r.gw.url, r.keyValue).messages.create({ model: 'team-msg', max_tokens: 8, messages: [{ role: 'user', content: 'x' }], stream: true }).asResponse();
  t.ok(raw.headers.get('x-switchyard-request-id'));
  await raw.text();
});
