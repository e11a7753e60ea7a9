import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startDataPlane, startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, readIncrementally, seedGroup, sseBlocks, withTimeout } from './helpers/dataplane-scenarios.ts';

// One failure, one description: a stream that stalls or breaks is named with the same status
// and the same vendor words whether the gateway answers it with an HTTP error (before the
// stream's first byte) or ends the stream with an error event (after it). The words are each
// vendor's own: OpenAI's 5xx `server_error`, Anthropic's `api_error` (502) and
// `timeout_error` (504), Google's canonical `UNAVAILABLE` and `DEADLINE_EXCEEDED`.

const BOUND_MS = 30_000;
const IDLE_MS = 300;

interface Style {
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  first: string;
  /** The vendor's word for an error of `status`, read from an HTTP error body or a stream error event's data. */
  word: (body: any) => unknown;
  words: Record<502 | 504, unknown>;
}

const STYLES: Style[] = [
  {
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    body: { model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    first: `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'first-event' } }] })}\n\n`,
    word: (b) => b.error.type,
    words: { 502: 'server_error', 504: 'server_error' },
  },
  {
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    first: `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 0 } }, marker: 'first-event' })}\n\n`,
    word: (b) => b.error.type,
    words: { 502: 'api_error', 504: 'timeout_error' },
  },
  {
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:streamGenerateContent?alt=sse',
    body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    first: `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'first-event' }] } }] })}\r\n\r\n`,
    word: (b) => [b.error.code, b.error.status],
    words: { 502: [502, 'UNAVAILABLE'], 504: [504, 'DEADLINE_EXCEEDED'] },
  },
];

const FAILURES = [
  { what: 'breaks', status: 502 as const, code: 'upstream_stream_broken', then: (res: ServerResponse) => setTimeout(() => res.socket?.destroy(), 50) },
  { what: 'stalls', status: 504 as const, code: 'upstream_idle_timeout', then: () => {} },
];

async function gatewayFor(t: Test, style: Style, baseUrl: string): Promise<{ gw: Gateway; keyValue: string }> {
  const gw = await startDataPlane({ streamIdleTimeoutMs: IDLE_MS });
  t.teardown(() => gw.close());
  await seedGroup(gw.store, { channel: style.channel, baseUrl, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  return { gw, keyValue };
}

function send(gw: Gateway, style: Style, keyValue: string): Promise<Response> {
  return fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...clientAuthHeaders(style.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(style.body) });
}

function dataOf(block: string): any {
  return JSON.parse(
    block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n'),
  );
}

for (const style of STYLES) {
  for (const failure of FAILURES) {
    t.test(`${style.protocol}: a stream that ${failure.what} is named ${failure.status} alike before and after its first byte`, async (t) => {
      const before = await startUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        failure.then(res);
      });
      const after = await startUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(style.first);
        failure.then(res);
      });
      t.teardown(async () => {
        await before.close();
        await after.close();
      });

      const early = await gatewayFor(t, style, before.url);
      const answer = await withTimeout(send(early.gw, style, early.keyValue), BOUND_MS, 'the HTTP error');
      t.equal(answer.status, failure.status, 'answered with the HTTP error before the first byte');
      const body: any = await answer.json();
      t.same(style.word(body), style.words[failure.status], 'in the vendor words of its status');
      if (style.protocol === 'x-messages') t.match(body, { request_id: answer.headers.get('request-id') ?? 'no header' }, "the body's request_id is the request-id header");

      const late = await gatewayFor(t, style, after.url);
      const res = await send(late.gw, style, late.keyValue);
      t.equal(res.status, 200);
      const blocks = sseBlocks(await withTimeout(readIncrementally(res), BOUND_MS, 'the stream to be ended'));
      t.match(blocks[0], /first-event/);
      t.equal(blocks.length, 2, 'then the error event', { blocks });
      const event = dataOf(blocks[1]!);
      t.same(style.word(event), style.words[failure.status], 'the error event names it with the same words');
      t.same(JSON.stringify(event).includes(failure.code), true, 'with its code');
    });
  }
}

t.test("a Group without a base URL is the operator's fault: 502 upstream_base_url_missing, in each style's 5xx words", async (t) => {
  const expected: Record<string, unknown> = {
    'x-completions': { error: { type: 'server_error', code: 'upstream_base_url_missing' } },
    'x-messages': { type: 'error', error: { type: 'api_error', code: 'upstream_base_url_missing' } },
    'x-generate': { error: { code: 502, status: 'UNAVAILABLE', details: [{ reason: 'upstream_base_url_missing' }] } },
  };
  for (const style of STYLES) {
    const { gw, keyValue } = await gatewayFor(t, style, '');
    const res = await send(gw, style, keyValue);
    t.equal(res.status, 502, style.protocol);
    const body: any = await res.json();
    t.match(body, expected[style.protocol], `${style.protocol} error shape`);
    if (style.protocol === 'x-messages') t.match(body, { request_id: res.headers.get('request-id') ?? 'no header' }, "the body's request_id is the request-id header");
  }
});
