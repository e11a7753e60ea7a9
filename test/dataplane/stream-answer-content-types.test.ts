import t from 'tap';
import { sseBlocks, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { bearer, STREAM_STYLES, streamScenario, type StreamStyle } from './helpers/stream-styles.ts';

// A stream request whose successful answer is not typed text/event-stream: some compatible
// upstreams send their event stream as text/plain, application/octet-stream, application/json
// or with no content type. Its first bytes decide: an event stream is relayed as one (usage
// read, the usage-only chunk the gateway asked for dropped, stalls watched), anything else as
// sent. A JSON error object in place of the stream is recorded as the upstream's error. And in
// a CRLF stream, the LF that completes a dropped usage chunk, arriving in a read of its own, is
// dropped with it.

const CONTENT = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }] })}\n\n`;
const USAGE_CHUNK = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`;
const DONE = 'data: [DONE]\n\n';
const USAGE = { input_tokens: 5, output_tokens: 2, cached_tokens: 0, reasoning_tokens: 0 };
const ERROR_BODY = JSON.stringify({ error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } });

const completions = STREAM_STYLES.completions!;
const WHOLE = CONTENT + USAGE_CHUNK + DONE;

for (const contentType of ['text/plain; charset=utf-8', 'application/octet-stream', 'application/json', undefined]) {
  t.test(`completions stream answered as ${contentType ?? 'no content type'}: relayed as SSE, the usage chunk dropped and its usage recorded`, async (t) => {
    const headers = { 'content-length': String(Buffer.byteLength(WHOLE)), ...(contentType === undefined ? {} : { 'content-type': contentType }) };
    const { gw, upstream, send } = await streamScenario(t, completions, headers, [WHOLE]);
    const res = await send();
    t.equal(await res.text(), CONTENT + DONE, 'the upstream\'s bytes without the usage-only chunk');
    t.equal(res.headers.get('content-type'), contentType ?? null, 'the content type as sent');
    t.equal(res.headers.get('content-length'), null, 'the upstream\'s length, which no longer holds, is not passed on');
    t.same(JSON.parse(upstream.requests[0]!.body.toString()).stream_options, { include_usage: true }, 'usage was asked for upstream');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null });
    t.same(record.usage, USAGE);
  });
}

t.test('a stream under text/plain opening with a BOM and blank lines, its first field split between reads, is still read as SSE', async (t) => {
  const pieces = ['\ufeff', '\r\n', 'da', `ta: ${CONTENT.slice(6)}${USAGE_CHUNK}${DONE}`];
  const { gw, send } = await streamScenario(t, completions, { 'content-type': 'text/plain' }, pieces);
  const res = await send();
  // Read as bytes: text() would strip the BOM.
  t.equal(Buffer.from(await res.arrayBuffer()).toString('utf8'), `\ufeff\r\n${CONTENT}${DONE}`, 'all but the usage chunk, byte for byte');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, USAGE);
});

t.test('a stream under text/plain that goes silent is ended with the protocol\'s error event, as an SSE-typed one', async (t) => {
  const { gw, send } = await streamScenario(t, completions, { 'content-type': 'text/plain' }, [CONTENT], { end: () => undefined, gateway: { streamIdleTimeoutMs: 300 } });
  const res = await send();
  const text = await withTimeout(res.text(), 10_000, 'the client stream to end');
  const blocks = sseBlocks(text);
  t.equal(blocks[0], CONTENT.trim(), 'the event sent first');
  t.match(JSON.parse(blocks.at(-1)!.slice('data: '.length)), { error: { code: 'upstream_idle_timeout' } }, 'then the error event');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'upstream_idle_timeout' });
});

t.test('a stream request answered under text/plain with no event stream: passed on as sent, its length kept', async (t) => {
  const text = 'upstream says: no stream today\n';
  const { gw, send } = await streamScenario(t, completions, { 'content-type': 'text/plain', 'content-length': String(text.length) }, [text]);
  const res = await send();
  t.equal(await res.text(), text);
  t.equal(res.headers.get('content-length'), String(text.length));
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});

t.test('a request that did not ask to stream is not read for a stream: an SSE body under text/plain goes whole, with its length', async (t) => {
  const { gw, upstream, send } = await streamScenario(t, completions, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(WHOLE)) }, [WHOLE]);
  const res = await send({ model: 'team-m', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(await res.text(), WHOLE);
  t.equal(res.headers.get('content-length'), String(Buffer.byteLength(WHOLE)));
  t.equal(JSON.parse(upstream.requests[0]!.body.toString()).stream_options, undefined);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});

for (const [name, style] of Object.entries(STREAM_STYLES)) {
  t.test(`${name} stream answered 200 with a JSON error object: passed on as sent, recorded as the upstream's error`, async (t) => {
    const { gw, send } = await streamScenario(t, style, { 'content-type': 'application/json' }, [ERROR_BODY]);
    const res = await send();
    t.equal(res.status, 200);
    t.equal(await res.text(), ERROR_BODY, 'as sent');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_error' });
  });
}

t.test('a JSON answer to a stream request whose error is null, or to a request that did not ask to stream, is no failure', async (t) => {
  const responses = STREAM_STYLES.responses!;
  const success = JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', error: null, usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
  const { gw, send } = await streamScenario(t, responses, { 'content-type': 'application/json' }, [success]);
  const res = await send();
  t.equal(await res.text(), success);
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null }, 'error: null is a success');
  const plain = await streamScenario(t, completions, { 'content-type': 'application/json' }, [ERROR_BODY]);
  const unstreamed = await plain.send({ model: 'team-m', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(await unstreamed.text(), ERROR_BODY);
  t.match(await waitForLog(plain.gw, unstreamed.headers.get('x-switchyard-request-id')), { status: 200, error_code: null }, 'a non-stream answer is judged by its status');
});

t.test('a CRLF stream whose dropped usage chunk\'s last LF comes in a read of its own: that LF is dropped with it', async (t) => {
  const crlf = (event: string) => event.replace(/\n/g, '\r\n');
  const usage = crlf(USAGE_CHUNK);
  const pieces = [crlf(CONTENT) + usage.slice(0, -1), usage.slice(-1), crlf(DONE)];
  const { gw, send } = await streamScenario(t, completions, { 'content-type': 'text/event-stream' }, pieces);
  const res = await send();
  t.equal(await res.text(), crlf(CONTENT) + crlf(DONE), 'the content event, then [DONE], with no stray LF between');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, USAGE);
});

t.test('a usage chunk without a choices member, or with a null one, is dropped too when the gateway asked for usage, LF (read from bytes) or CRLF (parsed)', async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  // A null choices passed on fails the openai SDK's stream helper (`chunk.choices is not iterable`).
  const chunks = {
    'no choices': `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', usage })}\n\n`,
    'null choices': `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: null, usage })}\n\n`,
  };
  for (const [label, chunk] of Object.entries(chunks)) {
    for (const eol of ['\n', '\r\n']) {
      const framed = (event: string) => event.replace(/\n/g, eol);
      const { gw, send } = await streamScenario(t, completions, { 'content-type': 'text/event-stream' }, [framed(CONTENT + chunk + DONE)]);
      const res = await send();
      t.equal(await res.text(), framed(CONTENT + DONE), `${label}, ${JSON.stringify(eol)}: the usage chunk dropped`);
      t.same((await waitForLog(gw, res.headers.get('x-switchyard-request-id'))).usage, USAGE);
    }
  }
});

// Whether a request asked to stream is read as routing reads it, from any body: a JSON body
// too large to parse (spooled, its members scanned) or a form's text fields read before its first attempt.
const BUFFERED_JSON_BYTES = 4096;

t.test('a spooled completions stream request answered under text/plain is relayed as SSE, whether the client or the gateway asked for usage', async (t) => {
  const messages = [{ role: 'user', content: 'x'.repeat(2 * BUFFERED_JSON_BYTES) }];
  for (const clientAsked of [true, false]) {
    const headers = { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(WHOLE)) };
    const { gw, upstream, send } = await streamScenario(t, completions, headers, [WHOLE], { gateway: { bufferedJsonBytes: BUFFERED_JSON_BYTES } });
    const body = { model: 'team-m', stream: true, messages, ...(clientAsked ? { stream_options: { include_usage: true } } : {}) };
    t.ok(Buffer.byteLength(JSON.stringify(body)) > BUFFERED_JSON_BYTES, 'the body is over the buffered limit: spooled, not parsed');
    const res = await send(body);
    const label = clientAsked ? 'client asked for usage' : 'gateway asked for usage';
    t.equal(await res.text(), clientAsked ? WHOLE : CONTENT + DONE, `${label}: the usage chunk ${clientAsked ? 'kept' : 'hidden'}`);
    t.equal(res.headers.get('content-length'), null, `${label}: relayed as SSE, without the upstream's length`);
    t.same(JSON.parse(upstream.requests[0]!.body.toString()).stream_options, { include_usage: true });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null });
    t.same(record.usage, USAGE, `${label}: usage read from the stream`);
  }
});

t.test('a transcription form with stream=true answered with an SSE body under text/plain is relayed as SSE, its usage read', async (t) => {
  const boundary = 'stream-flag-boundary';
  const part = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  // The flag before the model (after it, see form-fields-after-model.test.ts).
  const form = `${part('stream', 'true')}${part('model', 'team-m')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....\r\n--${boundary}--\r\n`;
  const events = [
    `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'Hi' })}\n\n`,
    `data: ${JSON.stringify({ type: 'transcript.text.done', text: 'Hi', usage: { type: 'tokens', input_tokens: 14, output_tokens: 3, total_tokens: 17 } })}\n\n`,
  ].join('');
  const suite: StreamStyle = { protocol: 'x-suite', channel: 'ch03', path: '/v1/audio/transcriptions', body: {}, headers: bearer };
  const { gw, keyValue } = await streamScenario(t, suite, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(events)) }, [events]);
  const res = await fetch(`${gw.url}${suite.path}`, { method: 'POST', headers: { ...bearer(keyValue), 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
  t.equal(await res.text(), events, 'the events as sent');
  t.equal(res.headers.get('content-length'), null, 'relayed as SSE, without the upstream\'s length');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, { input_tokens: 14, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 }, 'usage read from the done event');
});

t.test('a text/plain answer that only trickles whitespace past 4 KiB goes on as a plain body: its head does not wait for the upstream to say more', async (t) => {
  let clientHasHead!: () => void;
  const headSeen = new Promise<void>((resolve) => (clientHasHead = resolve));
  const blank = '\n'.repeat(5000);
  // The upstream says no more until the client has the head: held until the stream opens, it never would.
  const { send } = await streamScenario(t, completions, { 'content-type': 'text/plain' }, [blank], { end: (res) => void headSeen.then(() => res.end(WHOLE)) });
  const res = await withTimeout(send(), 5000, 'the head');
  clientHasHead();
  t.equal(res.status, 200);
  t.equal(await res.text(), blank + WHOLE, 'the bytes as sent, the usage chunk included: no event stream opened');
});
