import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// An answer that opens with a byte order mark (some compatible upstreams write one): the SSE
// rules drop it, so the first event is read as if it were not there, its usage counted and
// an error it is the upstream's own recorded; a generate stream without alt=sse (one JSON
// array) after one is still relayed as an array. The client gets the bytes as sent, BOM too.

const BOM = '\uFEFF';
const USAGE = { input_tokens: 8, output_tokens: 4, cached_tokens: 0, reasoning_tokens: 0 };
const GENERATE_ANSWER = { candidates: [{ content: { parts: [{ text: 'hi' }], role: 'model' }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 4, totalTokenCount: 12 } };

interface Route {
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
}

const GENERATE_SSE: Route = { protocol: 'x-generate', channel: 'ch15', path: '/v1beta/models/team-m:streamGenerateContent?alt=sse', body: { contents: [] } };
const GENERATE_ARRAY: Route = { ...GENERATE_SSE, path: '/v1beta/models/team-m:streamGenerateContent' };
const COMPLETIONS: Route = { protocol: 'x-completions', channel: 'ch02', path: '/v1/chat/completions', body: { model: 'team-m', stream: true, stream_options: { include_usage: true }, messages: [] } };

/** The route's upstream answers 200 with `contentType`, writes `pieces` in separate reads, then `end` (ends by default). */
async function send(t: Test, route: Route, contentType: string, pieces: (string | Buffer)[], end: (res: ServerResponse) => void = (res) => res.end()) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    async (_req, res) => {
      res.writeHead(200, { 'content-type': contentType });
      for (const piece of pieces) await new Promise<void>((resolve) => res.write(piece, () => resolve()));
      end(res);
    },
    { streamIdleTimeoutMs: 300 },
  );
  await seedGroup(gw.store, { channel: route.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-0123456789'] });
  const { keyValue } = await createKey(gw.store, { protocols: [route.protocol] });
  const res = await fetch(`${gw.url}${route.path}`, { method: 'POST', headers: { ...clientAuthHeaders(route.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(route.body) });
  // Bytes, not text: decoding would drop the BOM.
  const bytes = Buffer.from(await withTimeout(res.arrayBuffer(), 10_000, 'the client stream to end'));
  return { status: res.status, bytes, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
}

t.test('a generate alt=sse stream opening with a BOM: the usage of its one event is recorded, the bytes go as sent', async (t) => {
  const stream = `${BOM}data: ${JSON.stringify(GENERATE_ANSWER)}\r\n\r\n`;
  const { bytes, record } = await send(t, GENERATE_SSE, 'text/event-stream', [stream]);
  t.same(bytes, Buffer.from(stream), 'byte for byte, BOM included');
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, USAGE);
});

for (const contentType of ['text/event-stream', 'text/plain']) {
  t.test(`a completions stream under ${contentType} opening with a BOM: the usage of its first event is recorded`, async (t) => {
    const chunk = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 } };
    const { record } = await send(t, COMPLETIONS, contentType, [`${BOM}data: ${JSON.stringify(chunk)}\n\n`, 'data: [DONE]\n\n']);
    t.match(record, { status: 200, error_code: null });
    t.same(record.usage, USAGE);
  });
}

t.test("a stream whose first event, after a BOM, is the upstream's own error event is recorded upstream_stream_error", async (t) => {
  const { record } = await send(t, GENERATE_SSE, 'text/event-stream', [`${BOM}data: ${JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })}\r\n\r\n`]);
  t.match(record, { status: 200, error_code: 'upstream_stream_error' });
});

t.test('a BOM before a whole last event that lacks its blank line: still a whole event, a success', async (t) => {
  const { status, bytes, record } = await send(t, GENERATE_SSE, 'text/event-stream', [`${BOM}data: ${JSON.stringify(GENERATE_ANSWER)}`]);
  t.equal(status, 200);
  t.notMatch(bytes.toString('utf8'), /upstream_stream_broken/, 'no error event');
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, USAGE);
});

t.test('a generate JSON-array stream opening with a BOM, split between reads, is relayed as an array: its usage read', async (t) => {
  const bom = Buffer.from(BOM);
  const { bytes, record } = await send(t, GENERATE_ARRAY, 'application/json', [bom.subarray(0, 1), Buffer.concat([bom.subarray(1), Buffer.from(`[${JSON.stringify(GENERATE_ANSWER)}]`)])]);
  t.same(JSON.parse(bytes.subarray(3).toString('utf8')), [GENERATE_ANSWER], 'the array as sent, after the BOM');
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, USAGE);
});

t.test('a generate JSON-array stream opening with a BOM that stalls is closed with the error element', async (t) => {
  const { bytes, record } = await send(t, GENERATE_ARRAY, 'application/json', [`${BOM}[${JSON.stringify(GENERATE_ANSWER)}`], () => {
    /* stalls */
  });
  const parsed = JSON.parse(bytes.subarray(3).toString('utf8')) as unknown[];
  t.equal(parsed.length, 2, 'the element sent, then the error');
  t.match(parsed[1], { error: { details: [{ reason: 'upstream_idle_timeout' }] } });
  t.match(record, { error_code: 'upstream_idle_timeout' });
  t.same(record.usage, USAGE, 'the element the client got whole counts');
});

// The same BOM before a JSON answer that is parsed whole (a responses answer, for its id; an
// answer in place of a stream, for an error): JSON.parse refuses it, so the gateway passes over it.

const RESPONSES: Route = { protocol: 'x-responses', channel: 'ch09', path: '/v1/responses', body: { model: 'team-m', input: 'hi' } };

t.test('a responses answer (not streamed) opening with a BOM: its usage is recorded', async (t) => {
  const answer = { id: 'resp_1', object: 'response', status: 'completed', output: [], usage: { input_tokens: 8, output_tokens: 4, total_tokens: 12 } };
  const { record } = await send(t, RESPONSES, 'application/json', [`${BOM}${JSON.stringify(answer)}`]);
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, USAGE);
});

t.test("a stream request answered with a JSON error object after a BOM is recorded as the upstream's error", async (t) => {
  const { record } = await send(t, COMPLETIONS, 'application/json', [`${BOM}${JSON.stringify({ error: { message: 'The model is overloaded.', type: 'server_error', code: null } })}`]);
  t.match(record, { status: 200, error_code: 'upstream_stream_error' });
});
