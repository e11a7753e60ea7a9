import t from 'tap';
import OpenAI from 'openai';
import { jsonBody, logOf, responseEvents, responseObject, rig, writeJson, writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// The openai SDK's responses helpers with function calling (ch09, native).

const ROUTE = { channel: 'ch09', protocols: ['x-responses'], external: 'team-resp', upstreamModel: 'vendor-resp-1' };

function client(url: string, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });
}

const TOOL = { type: 'function' as const, name: 'get_weather', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } } } };

function functionCallResponse(model: string, status: 'in_progress' | 'completed', usage?: { input_tokens: number; output_tokens: number }) {
  const base = responseObject(model, '', status, usage);
  return {
    ...base,
    id: 'resp_up_fc',
    tools: [{ ...TOOL, description: null }],
    output: status === 'completed' ? [{ id: 'fc_up_1', type: 'function_call', status: 'completed', arguments: '{"city":"Rome"}', call_id: 'call_up_1', name: 'get_weather' }] : [],
  };
}

/** The responses event sequence for one function call. */
function functionCallEvents(model: string, args: readonly string[], usage: { input_tokens: number; output_tokens: number }): SseFrame[] {
  const item = { id: 'fc_up_1', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'call_up_1', name: 'get_weather' };
  const bodies: Record<string, unknown>[] = [
    { type: 'response.created', response: functionCallResponse(model, 'in_progress') },
    { type: 'response.in_progress', response: functionCallResponse(model, 'in_progress') },
    { type: 'response.output_item.added', output_index: 0, item },
    ...args.map((delta) => ({ type: 'response.function_call_arguments.delta', item_id: 'fc_up_1', output_index: 0, delta })),
    { type: 'response.function_call_arguments.done', item_id: 'fc_up_1', output_index: 0, arguments: args.join('') },
    { type: 'response.output_item.done', output_index: 0, item: { ...item, status: 'completed', arguments: args.join('') } },
    { type: 'response.completed', response: functionCallResponse(model, 'completed', usage) },
  ];
  return bodies.map((b, i) => ({ event: b['type'] as string, data: { ...b, sequence_number: i } }));
}

t.test('responses.stream(): function call argument deltas assemble in finalResponse(); usage logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, functionCallEvents(String(jsonBody(req)['model']), ['{"ci', 'ty":"Ro', 'me"}'], { input_tokens: 44, output_tokens: 17 })));
  const stream = client(r.gw.url, r.keyValue).responses.stream({ model: 'team-resp', input: 'weather in Rome?', tools: [TOOL] });
  const deltas: string[] = [];
  stream.on('response.function_call_arguments.delta', (e) => deltas.push(e.delta));
  const final = await stream.finalResponse();
  t.same(deltas, ['{"ci', 'ty":"Ro', 'me"}']);
  t.match(final.output, [{ type: 'function_call', call_id: 'call_up_1', name: 'get_weather', arguments: '{"city":"Rome"}' }]);
  t.match(final.usage, { input_tokens: 44, output_tokens: 17 });
  t.match(jsonBody(r.upstream.requests[0]!), { model: 'vendor-resp-1', stream: true, tools: [{ type: 'function', name: 'get_weather' }] });
  await r.gw.logs.flush();
  const { items } = await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 5 });
  t.equal(items.length, 1);
  t.match((await r.gw.logs.get(items[0]!.request_id))?.usage, { input_tokens: 44, output_tokens: 17 });
});

t.test('responses.create with tools, then previous_response_id continuation: both turns forwarded and logged', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => {
    const body = jsonBody(req);
    if (body['previous_response_id'] === undefined) writeJson(res, 200, functionCallResponse(String(body['model']), 'completed', { input_tokens: 50, output_tokens: 20 }));
    else writeJson(res, 200, { ...responseObject(String(body['model']), 'Sunny in Rome.', 'completed', { input_tokens: 70, output_tokens: 6 }), id: 'resp_up_2', previous_response_id: body['previous_response_id'] });
  });
  const c = client(r.gw.url, r.keyValue);
  const { data: first, response: firstRaw } = await c.responses.create({ model: 'team-resp', input: 'weather in Rome?', tools: [TOOL] }).withResponse();
  const call = first.output[0];
  t.match(call, { type: 'function_call', call_id: 'call_up_1', arguments: '{"city":"Rome"}' });
  const { data: second, response: secondRaw } = await c.responses
    .create({ model: 'team-resp', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_up_1', output: 'sunny' }], tools: [TOOL] })
    .withResponse();
  t.equal(second.output_text, 'Sunny in Rome.');
  t.equal(second.previous_response_id, 'resp_up_fc');
  t.match(jsonBody(r.upstream.requests[1]!), { model: 'vendor-resp-1', previous_response_id: 'resp_up_fc', input: [{ type: 'function_call_output', call_id: 'call_up_1', output: 'sunny' }] });
  t.match((await logOf(r.gw, firstRaw.headers.get('x-switchyard-request-id')))?.usage, { input_tokens: 50, output_tokens: 20 });
  t.match((await logOf(r.gw, secondRaw.headers.get('x-switchyard-request-id')))?.usage, { input_tokens: 70, output_tokens: 6 });
  t.equal((second as { _request_id?: string | null })._request_id, secondRaw.headers.get('x-switchyard-request-id'));
});

t.test('responses.create stream withResponse(): the gateway request id names the record with the streamed usage', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, responseEvents(String(jsonBody(req)['model']), ['a', 'b'], { input_tokens: 3, output_tokens: 2 })));
  const { data, response } = await client(r.gw.url, r.keyValue).responses.create({ model: 'team-resp', input: 'x', stream: true }).withResponse();
  for await (const event of data) void event;
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.match(log?.usage, { input_tokens: 3, output_tokens: 2 });
});
