import t from 'tap';
import type { OutgoingHttpHeaders } from 'node:http';
import { waitForLog, withTimeout, readIncrementally } from './helpers/dataplane-scenarios.ts';
import { STREAM_STYLES, streamScenario } from './helpers/stream-styles.ts';

// Issue 4 item 2: the upstream credential never reaches a client. An upstream that answers a
// stream 200 and then sends its own error event (or, in place of the stream, a JSON error
// object) echoing the key it was sent: the client gets `***<last4>` in its place, the event's
// framing and the events before it as sent, and the record is the upstream's error as before.

const SECRET = 'sk-stream-canary-0123456789abcdef';
const MASKED = '***cdef';

const masked = (text: string): string => text.split(SECRET).join(MASKED);
const SSE = { 'content-type': 'text/event-stream' };

interface Case {
  style: string;
  headers: OutgoingHttpHeaders;
  /** The upstream's reads: a successful event, then (in a read of its own, or with the one before) its error. */
  pieces: string[];
}

const completionsChunk = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' } }] })}\n\n`;
const CASES: Record<string, Case> = {
  'completions data: {"error": ...}': {
    style: 'completions',
    headers: SSE,
    pieces: [completionsChunk, completionsChunk + `data: ${JSON.stringify({ error: { message: `Incorrect API key provided: ${SECRET}.`, type: 'invalid_request_error', code: 'invalid_api_key' } })}\n\n`],
  },
  'messages event: error': {
    style: 'messages',
    headers: SSE,
    pieces: [
      `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 0 } } })}\n\n`,
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${SECRET}` } })}\n\n`,
    ],
  },
  'responses error, then response.failed': {
    style: 'responses',
    headers: SSE,
    pieces: [
      `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress' } })}\n\n`,
      `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: 1, code: 'invalid_api_key', message: `bad key ${SECRET}`, param: null })}\n\n` +
        `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 2, response: { id: 'resp_1', status: 'failed', error: { code: 'invalid_api_key', message: `bad key ${SECRET}` } } })}\n\n`,
    ],
  },
  'generate alt=sse {"error": ...} (CRLF)': {
    style: 'generate alt=sse',
    headers: SSE,
    pieces: [
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] })}\r\n\r\n`,
      `data: ${JSON.stringify({ error: { code: 400, message: `API key not valid: ${SECRET}`, status: 'INVALID_ARGUMENT' } })}\r\n\r\n`,
    ],
  },
  'generate JSON array {"error": ...} element': {
    style: 'generate array',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    pieces: [`[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}`, `,\r\n{"candidates": [{"content": {"parts": [{"text": "more"}]}}]},\r\n${JSON.stringify({ error: { code: 400, message: `API key not valid: ${SECRET}`, status: 'INVALID_ARGUMENT' } })}]`],
  },
  // Its bytes go on at its closing brace, before the `]` that hands the element over.
  'generate JSON array {"error": ...} element, its `]` in a later read': {
    style: 'generate array',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    pieces: [`[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}`, `,\r\n${JSON.stringify({ error: { code: 400, message: `API key not valid: ${SECRET}`, status: 'INVALID_ARGUMENT' } })}`, ']'],
  },
};

for (const [name, c] of Object.entries(CASES)) {
  t.test(`${name}: the upstream's secret in its own error event reaches the client masked, the stream otherwise as sent`, async (t) => {
    const { gw, send } = await streamScenario(t, STREAM_STYLES[c.style]!, c.headers, c.pieces, { secret: SECRET });
    const res = await send();
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.notOk(text.includes(SECRET), 'the secret does not reach the client');
    t.equal(text, masked(c.pieces.join('')), 'the events as sent, `***<last4>` in place of the secret');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_error', client_aborted: false });
  });
}

t.test('generate JSON array ending after an error element echoing the secret, without its `]`: masked, then closed as before', async (t) => {
  const pieces = [`[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}`, `,\r\n${JSON.stringify({ error: { code: 400, message: `API key not valid: ${SECRET}`, status: 'INVALID_ARGUMENT' } })}`];
  const { gw, send } = await streamScenario(t, STREAM_STYLES['generate array']!, { 'content-type': 'application/json; charset=UTF-8' }, pieces, { secret: SECRET });
  const res = await send();
  const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
  t.notOk(text.includes(SECRET), 'the secret does not reach the client');
  t.ok(text.startsWith(masked(pieces.join(''))), 'the elements as sent, `***<last4>` in place of the secret');
  t.equal((JSON.parse(text) as unknown[]).length, 3, 'closed with the gateway\'s error element, as an array cut short after an error element is');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'upstream_stream_error' });
});

const ERROR_BODY = JSON.stringify({ error: { message: `Incorrect API key provided: ${SECRET}`, type: 'invalid_request_error', code: 'invalid_api_key' } });

for (const [name, style] of Object.entries(STREAM_STYLES)) {
  t.test(`${name} stream answered 200 with a JSON error object echoing the secret: masked, its length the masked body's`, async (t) => {
    const { gw, send } = await streamScenario(t, style, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(ERROR_BODY)) }, [ERROR_BODY], { secret: SECRET });
    const res = await send();
    t.equal(res.status, 200);
    const text = await res.text();
    t.equal(text, masked(ERROR_BODY));
    const length = res.headers.get('content-length');
    if (length !== null) t.equal(Number(length), Buffer.byteLength(text), 'a length sent is the masked body\'s');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_error' });
  });
}

t.test('a JSON answer to a stream request that is no error goes as sent, with its length', async (t) => {
  const responses = STREAM_STYLES.responses!;
  const success = JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', error: null, usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
  const { gw, send } = await streamScenario(t, responses, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(success)) }, [success], { secret: SECRET });
  const res = await send();
  t.equal(await res.text(), success);
  t.equal(res.headers.get('content-length'), String(Buffer.byteLength(success)));
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});

t.test('a JSON answer to a stream request held for its end that stalls is ended at the idle timeout, with the gateway\'s error', async (t) => {
  const completions = STREAM_STYLES.completions!;
  // The body timeout's backstop ten minutes off: the idle timeout is what ends it.
  const { gw, send } = await streamScenario(t, completions, { 'content-type': 'application/json' }, ['{"error": {"message": "half'], { end: () => undefined, secret: SECRET, gateway: { streamIdleTimeoutMs: 300, headersTimeoutMs: 600_000 } });
  const res = await withTimeout(send(), 10_000, 'the answer at the idle timeout');
  t.equal(res.status, 504);
  const body = await withTimeout(res.text(), 10_000, 'the answer');
  t.match(JSON.parse(body), { error: { code: 'upstream_idle_timeout' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 504, error_code: 'upstream_idle_timeout' });
});

t.test('a JSON answer to a stream request past the capture limit is held no longer: it goes on as it arrives, whole and as sent', async (t) => {
  // The relay's capture limit (forward-native.ts): a body past it is no error object in place of a stream.
  const captureLimit = 4 * 1024 * 1024;
  const head = `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"${'x'.repeat(captureLimit)}`;
  const tail = '"}]}],"error":null}';
  let clientHasHead!: () => void;
  const headSeen = new Promise<void>((resolve) => (clientHasHead = resolve));
  // The upstream sends the rest only once the client has the first bytes: a body still held until its end never would.
  const { gw, send } = await streamScenario(t, STREAM_STYLES.responses!, { 'content-type': 'application/json' }, [head], { secret: SECRET, end: (res) => void headSeen.then(() => res.end(tail)) });
  const res = await withTimeout(send(), 10_000, 'the answer\'s head');
  t.equal(res.status, 200);
  const text = await withTimeout(readIncrementally(res, (soFar) => soFar.length > 0 && clientHasHead()), 10_000, 'the body, its first bytes before the upstream ends it');
  t.equal(text.length, head.length + tail.length, 'every byte');
  t.ok(text === head + tail, 'as sent');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});
