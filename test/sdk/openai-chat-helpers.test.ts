import t from 'tap';
import OpenAI from 'openai';
import { chatChunks, chatCompletion, jsonBody, logOf, rig, writeJson, writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// The openai SDK's chat helpers (stream(), runTools, parse) as clients of the chat completions route (ch02, native).

const ROUTE = { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' };

function client(url: string, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });
}

function includeUsage(body: Record<string, unknown>): boolean {
  return (body['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage === true;
}

/** A tool call streamed as OpenAI does: id and name first, the arguments in fragments, finish_reason tool_calls. */
function toolCallChunks(model: string, args: readonly string[], withUsage: boolean): SseFrame[] {
  const base = { id: 'chatcmpl-up-tool', object: 'chat.completion.chunk', created: 1_741_569_952, model, system_fingerprint: 'fp_up', service_tier: 'default' };
  const u = withUsage ? { usage: null } : {};
  const frames: SseFrame[] = [
    {
      data: {
        ...base,
        choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '' } }], refusal: null }, logprobs: null, finish_reason: null }],
        ...u,
      },
    },
    ...args.map((a) => ({ data: { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: a } }] }, logprobs: null, finish_reason: null }], ...u } })),
    { data: { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }], ...u } },
  ];
  if (withUsage) frames.push({ data: { ...base, choices: [], usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 } } } });
  frames.push({ data: '[DONE]' });
  return frames;
}

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

t.test('stream(): tool call deltas assemble into finalChatCompletion(); usage logged though the client did not ask', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    await writeSse(res, toolCallChunks(String(body['model']), ['{"ci', 'ty": "Pa', 'ris"}'], includeUsage(body)));
  });
  const stream = client(r.gw.url, r.keyValue).chat.completions.stream({ model: 'team-chat', messages: [{ role: 'user', content: 'weather?' }], tools: [WEATHER_TOOL] });
  const argDeltas: string[] = [];
  stream.on('tool_calls.function.arguments.delta', (e) => argDeltas.push(e.arguments_delta));
  const final = await stream.finalChatCompletion();
  t.same(argDeltas.filter(Boolean), ['{"ci', 'ty": "Pa', 'ris"}']);
  const call = final.choices[0]?.message.tool_calls?.[0];
  t.match(call, { id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } });
  t.same((call as { function: { parsed_arguments?: unknown } }).function.parsed_arguments, null, 'not a strict tool: no parsed_arguments');
  t.equal(final.choices[0]?.finish_reason, 'tool_calls');
  t.notOk(final.usage, 'no usage for a client that did not ask');
  await r.gw.logs.flush();
  const { items } = await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 10 });
  t.equal(items.length, 1);
  t.match((await r.gw.logs.get(items[0]!.request_id))?.usage, { input_tokens: 40, output_tokens: 12 });
});

t.test('stream() with include_usage: the usage chunk reaches the helper and the final completion', async (t) => {
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    await writeSse(res, chatChunks(String(body['model']), ['Use', 'd'], includeUsage(body)));
  });
  const stream = client(r.gw.url, r.keyValue).chat.completions.stream({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } });
  const chunks: { choices: unknown[]; usage?: unknown }[] = [];
  stream.on('chunk', (c) => chunks.push(c));
  const final = await stream.finalChatCompletion();
  t.equal(final.choices[0]?.message.content, 'Used');
  t.match(final.usage, { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 });
  t.same(chunks.at(-1)?.choices, []);
});

t.test('runTools: every turn goes through the gateway, each logged with its usage', async (t) => {
  let turn = 0;
  const r = await rig(t, ROUTE, (req, res) => {
    const model = String(jsonBody(req)['model']);
    turn += 1;
    if (turn === 1) {
      const first = chatCompletion(model, '', { prompt_tokens: 30, completion_tokens: 10, total_tokens: 40 });
      first.choices[0] = {
        index: 0,
        message: { role: 'assistant', content: null as unknown as string, refusal: null, annotations: [], tool_calls: [{ id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] } as never,
        logprobs: null,
        finish_reason: 'tool_calls',
      };
      writeJson(res, 200, first);
    } else writeJson(res, 200, chatCompletion(model, 'It is 3 degrees in Oslo.', { prompt_tokens: 55, completion_tokens: 9, total_tokens: 64 }));
  });
  const runner = client(r.gw.url, r.keyValue).chat.completions.runTools({
    model: 'team-chat',
    messages: [{ role: 'user', content: 'weather in Oslo?' }],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, function: (a: { city: string }) => `3 degrees in ${a.city}`, parse: JSON.parse } }],
  });
  const content = await runner.finalContent();
  t.equal(content, 'It is 3 degrees in Oslo.');
  t.equal(r.upstream.requests.length, 2);
  const second = jsonBody(r.upstream.requests[1]!);
  t.match(second['messages'], [{ role: 'user' }, { role: 'assistant', tool_calls: [{ id: 'call_up_1' }] }, { role: 'tool', tool_call_id: 'call_up_1', content: '3 degrees in Oslo' }]);
  t.equal(second['model'], 'vendor-chat-1');
  t.match(await runner.totalUsage(), { prompt_tokens: 85, completion_tokens: 19 });
  await r.gw.logs.flush();
  const { items } = await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 10 });
  t.equal(items.length, 2, 'one record per turn');
  const usages = await Promise.all(items.map(async (i) => (await r.gw.logs.get(i.request_id))?.usage));
  t.same(usages.map((u) => u?.input_tokens).sort(), [30, 55]);
});

t.test('parse() with a json_schema response_format: parsed comes from the upstream content; withResponse exposes the request id', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), '{"name":"Ada","age":36}')));
  const { data, response } = await client(r.gw.url, r.keyValue)
    .chat.completions.parse({
      model: 'team-chat',
      messages: [{ role: 'user', content: 'who?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'number' } }, required: ['name', 'age'], additionalProperties: false } } },
    })
    .withResponse();
  t.same(data.choices[0]?.message.parsed, { name: 'Ada', age: 36 });
  t.match(jsonBody(r.upstream.requests[0]!)['response_format'], { type: 'json_schema', json_schema: { name: 'person', strict: true } });
  const id = response.headers.get('x-switchyard-request-id');
  t.ok(id);
  t.equal((data as { _request_id?: string | null })._request_id, id, 'the SDK reads the gateway request id from x-request-id');
  t.match((await logOf(r.gw, id))?.usage, { input_tokens: 11, output_tokens: 4 });
});

t.test('asResponse(): the raw response carries the gateway request id', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), 'raw')));
  const raw = await client(r.gw.url, r.keyValue).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).asResponse();
  t.equal(raw.status, 200);
  t.ok(raw.headers.get('x-switchyard-request-id'));
  t.equal(raw.headers.get('x-request-id'), raw.headers.get('x-switchyard-request-id'));
  t.match(((await raw.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content, 'raw');
});

t.test('runTools with stream: true: both streamed turns logged with the usage the gateway withheld from the client', async (t) => {
  let turn = 0;
  const r = await rig(t, ROUTE, async (req, res) => {
    const body = jsonBody(req);
    turn += 1;
    await writeSse(res, turn === 1 ? toolCallChunks(String(body['model']), ['{"city":', '"Oslo"}'], includeUsage(body)) : chatChunks(String(body['model']), ['Cold', '.'], includeUsage(body)));
  });
  const runner = client(r.gw.url, r.keyValue).chat.completions.runTools({
    model: 'team-chat',
    stream: true,
    messages: [{ role: 'user', content: 'weather in Oslo?' }],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, function: (a: { city: string }) => `cold in ${a.city}`, parse: JSON.parse } }],
  });
  t.equal(await runner.finalContent(), 'Cold.');
  t.equal(r.upstream.requests.length, 2);
  t.match(jsonBody(r.upstream.requests[1]!)['messages'], [{ role: 'user' }, { role: 'assistant', tool_calls: [{ id: 'call_up_1', function: { arguments: '{"city":"Oslo"}' } }] }, { role: 'tool', content: 'cold in Oslo' }]);
  await r.gw.logs.flush();
  const { items } = await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 10 });
  const usages = await Promise.all(items.map(async (i) => (await r.gw.logs.get(i.request_id))?.usage));
  t.same(usages.map((u) => [u?.input_tokens, u?.output_tokens]).sort(), [[40, 12], [9, 5]].sort());
});
