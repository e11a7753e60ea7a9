import t, { type Test } from 'tap';
import { CHANNELS } from '../../src/generated/index.ts';
import { startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { completionsSse, startChatRoute } from './helpers/chat-route.ts';
import { chatBody, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';

// Two channel wire quirks the manifest declares, through the real data plane against substitute
// upstreams: ch03's `stream_usage: unasked` (no stream_options added, usage read from its last
// chunk, nothing hidden) and `credential_headers` for messages (ch29, ch19; ch14 keeps x-api-key).

const SECRET = 'sk-upstream-quirks-4c2e';
const MODEL = 'team-chat';
const base = { id: 'cmpl-7', object: 'chat.completion.chunk', created: 1, model: MODEL };

/** A stream in the shape of the vendor ch03 stands for: usage on the last chunk, the one with finish_reason. */
const UNASKED_CHUNKS = [
  { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
  { ...base, choices: [{ index: 0, delta: { content: 'Bonjour' }, finish_reason: null }] },
  { ...base, choices: [{ index: 0, delta: { content: '!' }, finish_reason: 'stop' }], usage: { prompt_tokens: 11, total_tokens: 14, completion_tokens: 3 } },
];
/** The OpenAI shape asked for by include_usage: a usage-only chunk after the last one with choices. */
const ASKED_CHUNKS = [
  { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }] },
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  { ...base, choices: [], usage: { prompt_tokens: 21, completion_tokens: 4, total_tokens: 25 } },
];

function chatRoute(t: Test, channel: string, chunks: unknown[]) {
  return startChatRoute(t, {
    channel,
    model: MODEL,
    secret: SECRET,
    respond: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(completionsSse(chunks));
    },
  });
}

t.test('ch03: a streamed chat completion goes without stream_options, every chunk reaches the client, the last chunk gives the usage', async (t) => {
  const { upstream, post } = await chatRoute(t, 'ch03', UNASKED_CHUNKS);
  const body = chatBody(MODEL, true);
  const { status, text, record } = await post(body);
  t.equal(status, 200);
  const sent = upstream.requests[0]!;
  t.notOk('stream_options' in JSON.parse(sent.body.toString('utf8')), 'no stream_options upstream');
  t.equal(sent.body.toString('utf8'), body, "the client's body byte for byte");
  t.equal(text, completionsSse(UNASKED_CHUNKS), 'the client gets the stream as the upstream sent it, no chunk hidden');
  t.match(record.usage, { input_tokens: 11, output_tokens: 3 }, "the record has the last chunk's usage");
});

t.test('ch03: a usage-only chunk the gateway did not ask for is passed on too', async (t) => {
  const { post } = await chatRoute(t, 'ch03', ASKED_CHUNKS);
  const { text, record } = await post(chatBody(MODEL, true));
  t.equal(text, completionsSse(ASKED_CHUNKS), 'every chunk, the usage-only one included');
  t.match(record.usage, { input_tokens: 21, output_tokens: 4 });
});

t.test("ch03: a client's own stream_options goes on as sent, and nothing is hidden from it", async (t) => {
  const { upstream, post } = await chatRoute(t, 'ch03', UNASKED_CHUNKS);
  for (const options of [{ include_usage: true }, { include_usage: false }, { continuous_usage_stats: true }]) {
    const body = chatBody(MODEL, true, { stream_options: options });
    const { status, text, record } = await post(body);
    t.equal(status, 200, JSON.stringify(options));
    t.equal(upstream.requests.at(-1)!.body.toString('utf8'), body, `${JSON.stringify(options)}: the body byte for byte`);
    t.equal(text, completionsSse(UNASKED_CHUNKS), `${JSON.stringify(options)}: every chunk`);
    t.match(record.usage, { input_tokens: 11, output_tokens: 3 });
  }
});

t.test('another completions channel (ch02) is still asked for usage, and the usage-only chunk it asked for is hidden', async (t) => {
  t.equal(CHANNELS.ch02.stream_usage, 'requested');
  const { upstream, post } = await chatRoute(t, 'ch02', ASKED_CHUNKS);
  const { status, text, record } = await post(chatBody(MODEL, true));
  t.equal(status, 200);
  t.same(JSON.parse(upstream.requests[0]!.body.toString('utf8')).stream_options, { include_usage: true }, 'include_usage added');
  t.equal(text, completionsSse(ASKED_CHUNKS.slice(0, 2)), 'the usage-only chunk is not passed on');
  t.match(record.usage, { input_tokens: 21, output_tokens: 4 });
});

t.test('a body over 1 MiB (spooled to a file) is asked for usage by the same rule: not on ch03, still on ch02', async (t) => {
  const body = chatBody(MODEL, true, { messages: [{ role: 'user', content: 'x'.repeat(1_200_000) }] });
  const unasked = await chatRoute(t, 'ch03', UNASKED_CHUNKS);
  const plain = await unasked.post(body);
  t.equal(plain.status, 200);
  t.equal(unasked.upstream.requests[0]!.body.toString('utf8'), body, "ch03: the client's body byte for byte");
  t.equal(plain.text, completionsSse(UNASKED_CHUNKS), 'ch03: every chunk');
  t.match(plain.record.usage, { input_tokens: 11, output_tokens: 3 });
  const asked = await chatRoute(t, 'ch02', ASKED_CHUNKS);
  const added = await asked.post(body);
  t.same(JSON.parse(asked.upstream.requests[0]!.body.toString('utf8')).stream_options, { include_usage: true }, 'ch02: include_usage added');
  t.equal(added.text, completionsSse(ASKED_CHUNKS.slice(0, 2)), 'ch02: the usage-only chunk is not passed on');
});

/** The headers a messages request reached the upstream with, on a Group of `channel`. */
async function messagesHeaders(t: Test, channel: 'ch14' | 'ch19' | 'ch29'): Promise<RecordedUpstreamRequest['headers']> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm-up', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } }));
  });
  await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm-up' }], secrets: [SECRET] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-messages'] });
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200, `${channel}: answered`);
  await res.arrayBuffer();
  t.equal(upstream.requests.length, 1);
  return upstream.requests[0]!.headers;
}

t.test("messages on ch29 carry the key where its manifest says: a bearer token, not x-api-key", async (t) => {
  t.same(CHANNELS.ch29.credential_headers?.['x-messages'], ['bearer'], 'the manifest declares bearer');
  const headers = await messagesHeaders(t, 'ch29');
  t.equal(headers.authorization, `Bearer ${SECRET}`);
  t.equal(headers['x-api-key'], undefined);
});

t.test('messages on ch19 carry the same key in both headers its manifest declares', async (t) => {
  t.same(CHANNELS.ch19.credential_headers?.['x-messages'], ['x-api-key', 'bearer']);
  const headers = await messagesHeaders(t, 'ch19');
  t.equal(headers.authorization, `Bearer ${SECRET}`);
  t.equal(headers['x-api-key'], SECRET);
});

t.test('messages on ch14 keep x-api-key alone', async (t) => {
  const headers = await messagesHeaders(t, 'ch14');
  t.equal(headers['x-api-key'], SECRET);
  t.equal(headers.authorization, undefined);
});
