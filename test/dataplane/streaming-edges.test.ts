import t, { type Test } from 'tap';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { MAX_HELD_EVENT_BYTES } from '../../src/dataplane/relay/stream-relay.ts';
import { startDataPlane, startUpstreamAndDataPlane, type Gateway, type Upstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, deferred, eventually, readIncrementally, seedGroup, sseBlocks, sseData, waitForLog, withTimeout, type Deferred } from './helpers/dataplane-scenarios.ts';

// Streaming edge cases (issue 4 item 3): a client that leaves aborts the upstream request and
// the log says so; an upstream that stalls or breaks mid-stream ends the client's stream with
// the protocol's own error event; completions streams get usage requested on the client's
// behalf and the extra usage chunk is not passed on.

interface StreamStyle {
  name: string;
  protocol: string;
  channel: string;
  path: (model: string) => string;
  body: (model: string) => Record<string, unknown>;
  /** The first event the upstream sends (carries the marker `first-event`). */
  first: string;
  /** Checks the error event that must end the client's stream. */
  errorEvent: (t: Test, block: string, code: string) => void;
  /** The style's own error events, as an upstream sends them mid-stream (each one a failure). */
  upstreamErrors: Record<string, string>;
  /** Events of a stream that went well, whose text and fields merely say "error". */
  innocent: string;
}


const STYLES: StreamStyle[] = [
  {
    name: 'completions',
    protocol: 'x-completions',
    channel: 'ch02',
    path: () => '/v1/chat/completions',
    body: (model) => ({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
    first: `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'first-event' } }] })}\n\n`,
    errorEvent: (t, block, code) => {
      t.notMatch(block, /^event:/m, 'completions errors have no event name');
      t.match(sseData(block), { error: { code, message: String, type: String } }, 'data: {"error": ...}');
    },
    upstreamErrors: { 'data: {"error": ...}': `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } })}\n\n` },
    innocent: `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'no "error": here' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
  },
  {
    name: 'responses',
    protocol: 'x-responses',
    channel: 'ch09',
    path: () => '/v1/responses',
    body: (model) => ({ model, stream: true, input: 'hi' }),
    first: `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress' }, marker: 'first-event' })}\n\n`,
    errorEvent: (t, block, code) => {
      t.match(block, /^event: error$/m, 'event: error');
      t.match(sseData(block), { type: 'error', code, message: String }, 'responses error data');
    },
    upstreamErrors: {
      'response.failed': `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 1, response: { id: 'resp_1', status: 'failed', error: { code: 'server_error', message: 'The model failed.' } } })}\n\n`,
      error: `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: 1, code: 'server_error', message: 'The model failed.', param: null })}\n\n`,
    },
    innocent: [
      `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, delta: 'no "error" here' })}\n\n`,
      `event: response.incomplete\ndata: ${JSON.stringify({ type: 'response.incomplete', sequence_number: 2, response: { id: 'resp_1', status: 'incomplete', error: null, incomplete_details: { reason: 'max_output_tokens' } } })}\n\n`,
    ].join(''),
  },
  {
    name: 'messages',
    protocol: 'x-messages',
    channel: 'ch14',
    path: () => '/v1/messages',
    body: (model) => ({ model, stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    first: `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 0 } }, marker: 'first-event' })}\n\n`,
    errorEvent: (t, block, code) => {
      t.match(block, /^event: error$/m, 'event: error');
      t.match(sseData(block), { type: 'error', error: { type: String, message: String, code } }, 'messages error data');
    },
    upstreamErrors: { 'event: error': `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n` },
    innocent: [
      `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'no "error" here' } })}\n\n`,
      `event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop' })}\n\n`,
    ].join(''),
  },
  {
    name: 'generate',
    protocol: 'x-generate',
    channel: 'ch15',
    path: (model) => `/v1beta/models/${model}:streamGenerateContent?alt=sse`,
    body: () => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    first: `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'first-event' }] } }] })}\r\n\r\n`,
    errorEvent: (t, block, code) => {
      t.match(sseData(block), { error: { code: Number, status: String, message: String, details: [{ reason: code }] } }, 'generate error data');
    },
    upstreamErrors: { 'data: {"error": ...}': `data: ${JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })}\r\n\r\n` },
    innocent: `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'no "error": here' }] }, finishReason: 'STOP' }] })}\r\n\r\n`,
  },
];

interface Scenario {
  gw: Gateway;
  upstream: Upstream;
  keyValue: string;
  upstreamClosed: Deferred;
}

/** One Group on the style's channel whose upstream sends the first event, then does `then`. */
async function scenario(t: Test, style: StreamStyle, then: (res: ServerResponse) => void, gatewayOptions = {}): Promise<Scenario> {
  const upstreamClosed = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(style.first);
    then(res);
  }, gatewayOptions);
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-stream'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  return { gw, upstream, keyValue, upstreamClosed };
}

function send(s: Scenario, style: StreamStyle, signal?: AbortSignal): Promise<Response> {
  return fetch(`${s.gw.url}${style.path('team-m')}`, {
    method: 'POST',
    headers: { ...clientAuthHeaders(style.protocol, s.keyValue), 'content-type': 'application/json' },
    body: JSON.stringify(style.body('team-m')),
    ...(signal ? { signal } : {}),
  });
}

for (const style of STYLES) {
  t.test(`${style.name}: a client that disconnects mid-stream aborts the upstream request; the log says client_aborted`, async (t) => {
    const s = await scenario(t, style, () => {
      /* keeps the stream open */
    });
    const controller = new AbortController();
    const res = await send(s, style, controller.signal);
    t.equal(res.status, 200);
    const requestId = res.headers.get('x-switchyard-request-id');
    const sawFirst = deferred();
    const reading = readIncrementally(res, (text) => {
      if (text.includes('first-event')) sawFirst.resolve();
    }).catch(() => undefined);
    await withTimeout(sawFirst.promise, 5000, 'the first event at the client');
    controller.abort();
    await reading;
    await withTimeout(s.upstreamClosed.promise, 5000, 'the upstream to see its response socket close');
    t.pass('the upstream request was aborted');
    const record = await waitForLog(s.gw, requestId);
    t.equal(record.client_aborted, true, 'client_aborted: true');
    t.equal(record.status, 200);
    t.equal(record.error_code, 'client_closed');
    t.match(record.attempts, [{ status: 200, error_code: 'client_closed' }], 'the attempt says the client left, as a stalled or broken one says why');
  });

  t.test(`${style.name}: an upstream that stalls mid-stream is ended with the protocol's error event`, async (t) => {
    const s = await scenario(
      t,
      style,
      () => {
        /* sends nothing more */
      },
      { streamIdleTimeoutMs: 300 },
    );
    const res = await send(s, style);
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    const blocks = sseBlocks(text);
    t.match(blocks[0], /first-event/, 'what was sent before the stall arrived');
    t.equal(blocks.length, 2, 'then exactly one more event: the error', { text });
    style.errorEvent(t, blocks.at(-1) ?? '', 'upstream_idle_timeout');
    await withTimeout(s.upstreamClosed.promise, 5000, 'the stalled upstream request to be closed');
    const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.error_code, 'upstream_idle_timeout');
    t.equal(record.client_aborted, false);
  });

  t.test(`${style.name}: an upstream that breaks mid-stream is ended with the protocol's error event`, async (t) => {
    const s = await scenario(t, style, (res) => {
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const res = await send(s, style);
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    const blocks = sseBlocks(text);
    t.match(blocks[0], /first-event/);
    t.equal(blocks.length, 2, 'then exactly one more event: the error', { text });
    style.errorEvent(t, blocks.at(-1) ?? '', 'upstream_stream_broken');
    const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.error_code, 'upstream_stream_broken');
  });
}

// ---- the other streams a client can leave ------------------------------------------------
// A generate stream without alt=sse (one JSON array, its elements sent as they come), an image
// generation's SSE and an x-suite transcription's SSE: the client leaving ends them as it ends
// the four conversation styles above.

const FORM_BOUNDARY = 'switchyard-leave-boundary';

const OTHER_STREAMS: { name: string; protocol: string; channel: string; path: string; contentType: string; body: string; upstreamType: string; first: string }[] = [
  {
    name: 'generate JSON array (no alt=sse)',
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:streamGenerateContent',
    contentType: 'application/json',
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    upstreamType: 'application/json; charset=UTF-8',
    first: `[${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'first-event' }] } }] })}`,
  },
  {
    name: 'x-images generation SSE',
    protocol: 'x-images',
    channel: 'ch09',
    path: '/v1/images/generations',
    contentType: 'application/json',
    body: JSON.stringify({ model: 'team-m', prompt: 'a lighthouse', stream: true, partial_images: 2 }),
    upstreamType: 'text/event-stream',
    first: `event: image_generation.partial_image\ndata: ${JSON.stringify({ type: 'image_generation.partial_image', partial_image_index: 0, b64_json: 'first-event' })}\n\n`,
  },
  {
    name: 'x-suite transcription SSE',
    protocol: 'x-suite',
    channel: 'ch03',
    path: '/v1/audio/transcriptions',
    contentType: `multipart/form-data; boundary=${FORM_BOUNDARY}`,
    body: [
      `--${FORM_BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nteam-m\r\n`,
      `--${FORM_BOUNDARY}\r\nContent-Disposition: form-data; name="stream"\r\n\r\ntrue\r\n`,
      `--${FORM_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n${'A'.repeat(1000)}\r\n`,
      `--${FORM_BOUNDARY}--\r\n`,
    ].join(''),
    upstreamType: 'text/event-stream',
    first: `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'first-event' })}\n\n`,
  },
];

for (const stream of OTHER_STREAMS) {
  t.test(`${stream.name}: a client that disconnects mid-stream aborts the upstream request; the log says client_aborted`, async (t) => {
    const upstreamClosed = deferred();
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.on('close', () => upstreamClosed.resolve());
      res.writeHead(200, { 'content-type': stream.upstreamType });
      // The first part, then the stream stays open.
      res.write(stream.first);
    });
    await seedGroup(gw.store, { channel: stream.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-stream'] });
    const { keyValue } = await createKey(gw.store, { protocols: [stream.protocol] });
    const controller = new AbortController();
    const res = await fetch(`${gw.url}${stream.path}`, {
      method: 'POST',
      headers: { ...clientAuthHeaders(stream.protocol, keyValue), 'content-type': stream.contentType },
      body: stream.body,
      signal: controller.signal,
    });
    t.equal(res.status, 200);
    const requestId = res.headers.get('x-switchyard-request-id');
    const sawFirst = deferred();
    const reading = readIncrementally(res, (text) => {
      if (text.includes('first-event')) sawFirst.resolve();
    }).catch(() => undefined);
    await withTimeout(sawFirst.promise, 5000, 'the first part at the client');
    t.equal(upstream.requests.length, 1, 'the stream reached the upstream');
    t.equal(upstreamClosed.settled, false, 'and was still open when the client left');
    controller.abort();
    await reading;
    await withTimeout(upstreamClosed.promise, 5000, 'the upstream to see its response socket close');
    const record = await waitForLog(gw, requestId);
    t.match(record, { status: 200, error_code: 'client_closed', client_aborted: true, protocol: stream.protocol }, 'the record says the client left');
    t.match(record.attempts, [{ status: 200, error_code: 'client_closed' }], 'and so does its attempt');
  });
}

// ---- errors the upstream sends inside its stream ------------------------------------------
// They reach the client as sent (the SDKs throw on them), and the record counts the request as
// failed: status 200, which the client got, and error_code upstream_stream_error.

for (const style of STYLES) {
  for (const [raw, event] of Object.entries(style.upstreamErrors)) {
    t.test(`${style.name}: an upstream's own ${raw} event reaches the client as sent and is logged as upstream_stream_error`, async (t) => {
      const s = await scenario(t, style, (res) => {
        setTimeout(() => res.end(event), 20);
      });
      const res = await send(s, style);
      t.equal(res.status, 200);
      const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
      t.equal(text, style.first + event, 'the client gets the upstream stream unchanged, no event added');
      const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 200, error_code: 'upstream_stream_error', client_aborted: false });
    });
  }

  t.test(`${style.name}: a stream whose content merely says "error" is logged as a success`, async (t) => {
    const s = await scenario(t, style, (res) => {
      setTimeout(() => res.end(style.innocent), 20);
    });
    const res = await send(s, style);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.equal(text, style.first + style.innocent);
    const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null });
  });
}

// ---- compressed streams ------------------------------------------------------------------
// An upstream may compress a stream although the gateway asked for identity: one in a coding
// the gateway decodes reaches the client decoded, its events read as any stream's; one in
// another coding is passed on untouched, nothing added to it.

for (const [coding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
  for (const style of STYLES.filter((s) => s.name !== 'generate')) {
    t.test(`${style.name}: a whole stream compressed with ${coding} reaches the client decoded, and ends as a success`, async (t) => {
      const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': coding });
        res.end(compress(Buffer.from(style.first + style.innocent)));
      });
      await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-stream'] });
      const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
      const res = await send({ gw, upstream, keyValue, upstreamClosed: deferred() }, style);
      t.equal(res.headers.get('content-encoding'), null, 'no content-encoding: the body goes decoded');
      t.equal(await res.text(), style.first + style.innocent, 'the events as the upstream wrote them, nothing added');
      t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
    });
  }
}

t.test('completions: a gzip stream has its usage read and the usage chunk the gateway asked for dropped', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    res.end(gzipSync(Buffer.from([...CONTENT_CHUNKS, USAGE_CHUNK, DONE].join(''))));
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [], stream: true }) });
  t.equal(await res.text(), [...CONTENT_CHUNKS, DONE].join(''), 'the content events and [DONE], without the usage chunk the client did not ask for');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null, usage: LOGGED_USAGE });
});

t.test('a stream in a coding the gateway cannot decode is passed on untouched, with its coding', async (t) => {
  const style = STYLES.find((s) => s.name === 'messages')!;
  const opaque = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5]);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'zstd' });
    res.end(opaque);
  });
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-stream'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const res = await send({ gw, upstream, keyValue, upstreamClosed: deferred() }, style);
  t.equal(res.headers.get('content-encoding'), 'zstd');
  // Read raw: fetch would try to decode zstd.
  t.same(Buffer.from(await new Response(res.body).arrayBuffer()), opaque, 'byte for byte, no event added');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
});

// ---- streams that end cleanly without their final event -----------------------------------
// A messages stream owes `message_stop`, a responses stream `response.completed` (or failed,
// incomplete): one that ends without it was cut short, though its connection ended cleanly.
// The client gets the protocol's error event so that its SDK does not take it for whole.

const LAST_BEFORE_FINAL: Record<string, string> = {
  messages: `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } })}\n\n`,
  responses: `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, delta: 'Hello' })}\n\n`,
};

for (const style of STYLES.filter((s) => s.name in LAST_BEFORE_FINAL)) {
  t.test(`${style.name}: a stream that ends cleanly without its final event gets the error event and is recorded upstream_stream_broken`, async (t) => {
    const last = LAST_BEFORE_FINAL[style.name]!;
    const s = await scenario(t, style, (res) => {
      setTimeout(() => res.end(last), 20);
    });
    const res = await send(s, style);
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.ok(text.startsWith(style.first + last), 'what the upstream sent arrived as sent');
    const blocks = sseBlocks(text.slice((style.first + last).length));
    t.equal(blocks.length, 1, 'then exactly one more event: the error', { text });
    style.errorEvent(t, blocks[0] ?? '', 'upstream_stream_broken');
    if (style.name === 'messages') t.match(sseData(blocks[0] ?? ''), { error: { type: 'api_error' } }, 'an api_error, as for a stream that broke off');
    // The delta the upstream sent was sequence number 1: the error event follows it.
    if (style.name === 'responses') t.match(sseData(blocks[0] ?? ''), { sequence_number: 2 });
    const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_broken', client_aborted: false });
  });
}

// ---- resumed responses streams (retrieve with starting_after) ------------------------------
// The stream goes on after the client's `starting_after`: the gateway's error event is numbered
// after it when no event numbered one passed (the openai SDK drops an event numbered at or below
// it). A resumed stream owes its final event once an event has passed: resumed at or past its
// end, it rightly has none. Only a whole-number `starting_after` resumes.

/** A responses upstream that answers a create with the background response `resp_bg` and a streamed retrieve with SSE, then `then`. */
async function resumedScenario(t: Test, then: (res: ServerResponse) => void) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (req, res) => {
      if (req.method === 'POST') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'resp_bg', object: 'response', status: 'queued', background: true, output: [], usage: null }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      then(res);
    },
    { streamIdleTimeoutMs: 300 },
  );
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-stream'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = clientAuthHeaders('x-responses', keyValue);
  const created = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', input: 'hi', background: true }) });
  t.equal(created.status, 200, 'the background response was created');
  await waitForLog(gw, created.headers.get('x-switchyard-request-id'));
  const retrieve = (query: string) => fetch(`${gw.url}/v1/responses/resp_bg${query}`, { headers });
  return { gw, upstream, retrieve };
}

const DELTA_50 = `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: 50, delta: 'Hello' })}\n\n`;

for (const [label, sent, sequence] of [
  ['before any event', ': keep-alive\n\n', 42],
  ['after an event numbered 50', DELTA_50, 51],
] as const) {
  t.test(`responses: a stream resumed after 41 that stalls ${label} ends with an error event numbered ${sequence}`, async (t) => {
    const { gw, retrieve } = await resumedScenario(t, (res) => res.write(sent));
    const res = await retrieve('?stream=true&starting_after=41');
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.ok(text.startsWith(sent), 'what the upstream sent arrived as sent', { text });
    const blocks = sseBlocks(text.slice(sent.length));
    t.equal(blocks.length, 1, 'then exactly one more event: the error', { text });
    t.match(blocks[0], /^event: error$/m);
    t.match(sseData(blocks[0] ?? ''), { type: 'error', code: 'upstream_idle_timeout', sequence_number: sequence });
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { operation: 'responses-retrieve', status: 200, error_code: 'upstream_idle_timeout' });
  });
}

t.test('responses: a resumed stream that ends cleanly with no event is the success it is: 200, an empty body, no error recorded', async (t) => {
  const { gw, retrieve } = await resumedScenario(t, (res) => res.end());
  const res = await retrieve('?stream=true&starting_after=41');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  t.equal(await res.text(), '', 'nothing added');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { operation: 'responses-retrieve', status: 200, error_code: null });
});

t.test('responses: a resumed stream that ends cleanly after an event, without its final event, was cut short: an error event numbered 51, recorded', async (t) => {
  const { gw, retrieve } = await resumedScenario(t, (res) => res.end(DELTA_50));
  const res = await retrieve('?stream=true&starting_after=41');
  t.equal(res.status, 200);
  const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
  t.ok(text.startsWith(DELTA_50), 'the delta arrived as sent', { text });
  const blocks = sseBlocks(text.slice(DELTA_50.length));
  t.equal(blocks.length, 1, 'then exactly one more event: the error', { text });
  t.match(sseData(blocks[0] ?? ''), { type: 'error', code: 'upstream_stream_broken', sequence_number: 51 });
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { operation: 'responses-retrieve', status: 200, error_code: 'upstream_stream_broken' });
});

for (const [label, sent, query] of [
  ['with no event', '', '?stream=true'],
  ['with no event, its `starting_after` empty', '', '?stream=true&starting_after='],
  ['with no event, its `starting_after` no number', '', '?stream=true&starting_after=abc'],
  ['after an event', DELTA_50, '?stream=true'],
] as const) {
  t.test(`responses: a retrieved stream not resumed (${query}) that ends cleanly ${label} still owes its final event: upstream_stream_broken`, async (t) => {
    const { gw, retrieve } = await resumedScenario(t, (res) => res.end(sent));
    const res = await retrieve(query);
    const requestId = res.headers.get('x-switchyard-request-id');
    if (sent === '') {
      t.equal(res.status, 502, 'answered with the gateway error, its headers still held');
      t.match(await res.json(), { error: { code: 'upstream_stream_broken' } });
      t.match(await waitForLog(gw, requestId), { status: 502, error_code: 'upstream_stream_broken' });
      return;
    }
    t.equal(res.status, 200);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    const blocks = sseBlocks(text.slice(sent.length));
    t.equal(blocks.length, 1, 'then exactly one more event: the error', { text });
    t.match(sseData(blocks[0] ?? ''), { type: 'error', code: 'upstream_stream_broken', sequence_number: 51 });
    t.match(await waitForLog(gw, requestId), { status: 200, error_code: 'upstream_stream_broken' });
  });
}

for (const style of STYLES.filter((s) => s.name in LAST_BEFORE_FINAL)) {
  for (const extra of ['\n\n', '\r\n']) {
    t.test(`${style.name}: line ends alone (${JSON.stringify(extra)}) in a read after the final event, then a clean end, leave the stream a success`, async (t) => {
      const s = await scenario(t, style, (res) => res.write(style.innocent, () => setTimeout(() => res.write(extra, () => setTimeout(() => res.end(), 50)), 50)));
      const res = await send(s, style);
      const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
      t.notOk(text.slice(`${style.first}${style.innocent}`.length).includes('error'), 'no error event added', { text });
      t.match(await waitForLog(s.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
    });
  }
}

for (const style of STYLES.filter((s) => s.name in LAST_BEFORE_FINAL)) {
  t.test(`${style.name}: a keep-alive comment after the final event, then a clean end or a stall, leaves the stream a success`, async (t) => {
    // Written apart, so that the comment is a read of its own, the last the gateway passes on.
    const s = await scenario(t, style, (res) => res.write(style.innocent, () => setTimeout(() => res.write(': keep-alive\n\n', () => setTimeout(() => res.end(), 50)), 50)));
    const res = await send(s, style);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.equal(text, `${style.first}${style.innocent}: keep-alive\n\n`, 'what the upstream sent, no event added');
    t.match(await waitForLog(s.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
    const stalled = await scenario(t, style, (res) => res.write(style.innocent, () => setTimeout(() => res.write(': keep-alive\n\n'), 50)), { streamIdleTimeoutMs: 300 });
    const stalledRes = await send(stalled, style);
    const stalledText = await withTimeout(readIncrementally(stalledRes).catch((err: Error) => `<client stream failed: ${err.message}>`), 10_000, 'the stalled stream to end');
    t.equal(stalledText, `${style.first}${style.innocent}: keep-alive\n\n`, 'a stall after it adds no event either');
    t.match(await waitForLog(stalled.gw, stalledRes.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
  });
}

// A block of `retry` or `id` alone dispatches no event (as a comment does not): after the final
// event it must not hide it, be the stream a completions one (its `[DONE]` then a stall) or one that owes its end.
for (const style of STYLES.filter((s) => s.name in LAST_BEFORE_FINAL || s.name === 'completions')) {
  for (const [name, block] of [['`retry: 3000` (LF)', 'retry: 3000\n\n'], ['`id: 42` (CRLF)', 'id: 42\r\n\r\n']]) {
    t.test(`${style.name}: a ${name} block after the final event, then a clean end or a stall, leaves the stream a success`, async (t) => {
      for (const [ending, then, options] of [
        ['clean end', (res: ServerResponse) => res.write(style.innocent, () => setTimeout(() => res.write(block, () => setTimeout(() => res.end(), 50)), 50)), {}],
        ['stall', (res: ServerResponse) => res.write(style.innocent, () => setTimeout(() => res.write(block), 50)), { streamIdleTimeoutMs: 300 }],
      ] as const) {
        // Written apart, so that the block is a read of its own, the last the gateway passes on.
        const s = await scenario(t, style, then, options);
        const res = await send(s, style);
        const text = await withTimeout(readIncrementally(res).catch((err: Error) => `<client stream failed: ${err.message}>`), 10_000, 'the client stream to end');
        t.equal(text, `${style.first}${style.innocent}${block}`, `${ending}: what the upstream sent, no event added`);
        t.match(await waitForLog(s.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null }, ending);
      }
    });
  }
}

for (const style of STYLES.filter((s) => s.name in LAST_BEFORE_FINAL)) {
  t.test(`${style.name}: a data: [DONE] after the final event (some compatible upstreams append it), then a clean end or a stall, leaves the stream a success`, async (t) => {
    const done = 'data: [DONE]\n\n';
    // Written apart, so that [DONE] is a read of its own, the last the gateway passes on.
    const s = await scenario(t, style, (res) => res.write(style.innocent, () => setTimeout(() => res.write(done, () => setTimeout(() => res.end(), 50)), 50)));
    const res = await send(s, style);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.equal(text, `${style.first}${style.innocent}${done}`, 'what the upstream sent, no event added');
    t.match(await waitForLog(s.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
    // Apart, then in the same read as the final event.
    for (const [how, then] of [
      ['apart', (res: ServerResponse) => res.write(style.innocent, () => setTimeout(() => res.write(done), 50))],
      ['together', (res: ServerResponse) => setTimeout(() => res.write(style.innocent + done), 20)],
    ] as const) {
      const stalled = await scenario(t, style, then, { streamIdleTimeoutMs: 300 });
      const stalledRes = await send(stalled, style);
      const stalledText = await withTimeout(readIncrementally(stalledRes).catch((err: Error) => `<client stream failed: ${err.message}>`), 10_000, 'the stalled stream to end');
      t.equal(stalledText, `${style.first}${style.innocent}${done}`, `a stall after it (${how}) adds no event either`);
      t.match(await waitForLog(stalled.gw, stalledRes.headers.get('x-switchyard-request-id')), { status: 200, error_code: null }, how);
    }
  });

  t.test(`${style.name}: a CRLF stream whose final event's last LF comes in the next read, with a keep-alive comment, leaves the stream a success`, async (t) => {
    const crlf = (text: string) => text.replaceAll('\n', '\r\n');
    const final = crlf(style.innocent);
    const ping = ': ping\r\n\r\n';
    // The final event's closing CR LF split between reads: the next read starts with the lone LF, then the comment.
    const s = await scenario(t, { ...style, first: crlf(style.first) }, (res) =>
      res.write(final.slice(0, -1), () => setTimeout(() => res.write(`\n${ping}`, () => setTimeout(() => res.end(), 50)), 50)),
    );
    const res = await send(s, style);
    const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
    t.equal(text, `${crlf(style.first)}${final}${ping}`, 'what the upstream sent, no event added');
    t.match(await waitForLog(s.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
  });
}

t.test('completions: a stream that ends cleanly without [DONE] (some compatible upstreams omit it) is still a success', async (t) => {
  const style = STYLES.find((s) => s.name === 'completions')!;
  const last = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`;
  const s = await scenario(t, style, (res) => {
    setTimeout(() => res.end(last), 20);
  });
  const res = await send(s, style);
  const text = await withTimeout(readIncrementally(res), 10_000, 'the client stream to end');
  t.equal(text, style.first + last, 'the upstream stream unchanged, no event added');
  const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});

// ---- completions usage injection ----------------------------------------------------------

const CONTENT_CHUNKS = [
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' } }] })}\n\n`,
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] })}\n\n`,
];
const USAGE_CHUNK = `data: ${JSON.stringify({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 2 } },
})}\n\n`;
const DONE = 'data: [DONE]\n\n';

async function usageScenario(t: Test, { withLength = false } = {}) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    const length = Buffer.byteLength([...CONTENT_CHUNKS, USAGE_CHUNK, DONE].join(''));
    res.writeHead(200, { 'content-type': 'text/event-stream', ...(withLength ? { 'content-length': String(length) } : {}) });
    for (const chunk of [...CONTENT_CHUNKS, USAGE_CHUNK, DONE]) res.write(chunk);
    res.end();
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const post = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [{ role: 'user', content: 'hi' }], ...body }) });
  return { gw, upstream, post };
}

const LOGGED_USAGE = { input_tokens: 11, output_tokens: 7, cached_tokens: 4, reasoning_tokens: 2 };

t.test('a client that stops reading a stream is not taken for a silent upstream: the record says client_stalled', async (t) => {
  const style = STYLES[0]!;
  // The upstream keeps sending as fast as the gateway takes it; only the client's pause stops it.
  const s = await scenario(
    t,
    style,
    (res) => {
      const event = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x'.repeat(16 * 1024) } }] })}\n\n`;
      const pump = () => {
        while (!res.destroyed && res.write(event));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    },
    { streamIdleTimeoutMs: 300 },
  );
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${s.gw.url}${style.path('team-m')}`, { method: 'POST', headers: { ...clientAuthHeaders(style.protocol, s.keyValue), 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(style.body('team-m')));
  });
  response.pause();
  response.on('error', () => {});
  await withTimeout(s.upstreamClosed.promise, 10_000, 'the upstream request to be ended');
  const record = await waitForLog(s.gw, String(response.headers['x-switchyard-request-id']));
  t.equal(record.error_code, 'client_stalled', 'the client, not the upstream, stopped the stream');
  t.equal(record.client_aborted, false, 'the client did not leave');
  t.equal(record.status, 200);
  response.destroy();
});

t.test('an SSE event larger than the relay holds is passed on before it ends, byte for byte, and the events after it are read as usual', async (t) => {
  const style = STYLES[0]!;
  const huge = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x'.repeat(MAX_HELD_EVENT_BYTES + 1024 * 1024) } }] })}\n\n`;
  const usage = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 7, completion_tokens: 5 } })}\n\n`;
  const tail = `${usage}data: [DONE]\n\n`;
  const clientHasMost = deferred();
  const s = await scenario(t, style, (res) => {
    // All of the event but its last bytes, in pieces as a network would deliver it; the rest
    // only once the client has the part a relay holding whole events would still be holding.
    const cut = huge.length - 100;
    for (let at = 0; at < cut; at += 1024 * 1024) res.write(huge.slice(at, Math.min(at + 1024 * 1024, cut)));
    void clientHasMost.promise.then(() => res.end(huge.slice(cut) + tail));
  });
  const res = await send(s, style);
  const text = await withTimeout(
    readIncrementally(res, (soFar) => {
      if (soFar.length > style.first.length + MAX_HELD_EVENT_BYTES) clientHasMost.resolve();
    }),
    20_000,
    'the whole stream',
  );
  t.ok(text === style.first + huge + tail, 'every byte arrives as the upstream sent it');
  const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null, usage: { input_tokens: 7, output_tokens: 5 } }, 'the usage event after it is read');
});

t.test('an upstream that breaks inside an SSE event too large to hold ends the client connection, since nothing valid can follow', async (t) => {
  const style = STYLES[0]!;
  const s = await scenario(t, style, (res) => {
    // Broken off once the gateway has taken in the whole piece (a timer could fire first on a busy machine).
    res.write(`data: {"id":"c1","choices":[{"index":0,"delta":{"content":"${'x'.repeat(MAX_HELD_EVENT_BYTES + 1024)}`, () => res.socket?.destroy());
  });
  const res = await send(s, style);
  const outcome = await withTimeout(res.text().then((text) => `ended after ${text.length} chars`, () => 'cut'), 20_000, 'the client stream to end');
  t.equal(outcome, 'cut', 'no error event is appended to half an event');
  const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.error_code, 'upstream_stream_broken');
});

t.test('an upstream that ends its body cleanly inside an SSE event too large to hold cuts the client connection: the event was cut short', async (t) => {
  // completions owes no [DONE]: only the unfinished event says the stream was cut.
  const style = STYLES[0]!;
  const s = await scenario(t, style, (res) => {
    res.end(`data: {"id":"c1","choices":[{"index":0,"delta":{"content":"${'x'.repeat(MAX_HELD_EVENT_BYTES + 1024)}`);
  });
  const res = await send(s, style);
  const outcome = await withTimeout(res.text().then((text) => `ended after ${text.length} chars`, () => 'cut'), 20_000, 'the client stream to end');
  t.equal(outcome, 'cut', 'the client cannot take half an event for a whole stream');
  const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'upstream_stream_broken', client_aborted: false });
});

// A final event too large to hold (a responses `response.completed` carrying a generated image)
// is passed on in pieces: its type is read from its first, since its last does not show it.
const PADDING = 'A'.repeat(MAX_HELD_EVENT_BYTES + 1024 * 1024);
const LARGE_EVENTS: { name: string; style: string; event: string; final: boolean }[] = [
  {
    name: 'a responses response.completed event',
    style: 'responses',
    event: `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { id: 'resp_1', status: 'completed', output: [{ type: 'image_generation_call', result: PADDING }] } })}\n\n`,
    final: true,
  },
  {
    name: 'a responses response.incomplete event without an event line (its data\'s type names it)',
    style: 'responses',
    event: `data: ${JSON.stringify({ type: 'response.incomplete', sequence_number: 1, response: { id: 'resp_1', status: 'incomplete', output: [{ type: 'image_generation_call', result: PADDING }] } })}\n\n`,
    final: true,
  },
  {
    // Only the first piece tells the type.
    name: 'a responses response.completed event in three pieces (over twice what the relay holds)',
    style: 'responses',
    event: `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { id: 'resp_1', status: 'completed', output: [{ type: 'image_generation_call', result: PADDING + PADDING }] } })}\n\n`,
    final: true,
  },
  { name: 'a messages message_stop event', style: 'messages', event: `event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop', padding: PADDING })}\n\n`, final: true },
  {
    name: 'a responses event that is not the final one',
    style: 'responses',
    event: `event: response.output_item.done\ndata: ${JSON.stringify({ type: 'response.output_item.done', sequence_number: 1, item: { type: 'image_generation_call', result: PADDING } })}\n\n`,
    final: false,
  },
  { name: 'a messages event that is not the final one', style: 'messages', event: `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, padding: PADDING })}\n\n`, final: false },
];

for (const large of LARGE_EVENTS) {
  const style = STYLES.find((s) => s.name === large.style)!;
  const outcome = large.final ? 'a success, with no event added' : 'still cut short: the error event follows and it is recorded upstream_stream_broken';
  t.test(`${large.name}, larger than the relay holds, as the last before a clean end: ${outcome}`, async (t) => {
    const s = await scenario(t, style, (res) => res.end(large.event));
    const res = await send(s, style);
    const text = await withTimeout(readIncrementally(res), 20_000, 'the client stream to end');
    const sent = style.first + large.event;
    t.ok(text.startsWith(sent), 'what the upstream sent arrived as sent');
    const blocks = sseBlocks(text.slice(sent.length));
    const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
    if (large.final) {
      t.equal(blocks.length, 0, 'nothing follows the final event', { added: blocks });
      t.match(record, { status: 200, error_code: null }, 'recorded a success');
    } else {
      t.equal(blocks.length, 1, 'then exactly one more event: the error');
      style.errorEvent(t, blocks[0] ?? '', 'upstream_stream_broken');
      t.match(record, { status: 200, error_code: 'upstream_stream_broken' }, 'recorded cut short');
    }
  });
}

t.test('completions stream without stream_options: usage is requested upstream, the usage chunk is not forwarded, tokens are logged', async (t) => {
  const { gw, upstream, post } = await usageScenario(t);
  const res = await post({ stream: true });
  const text = await res.text();
  const sent = JSON.parse(upstream.requests[0]!.body.toString());
  t.same(sent.stream_options, { include_usage: true }, 'include_usage added upstream');
  t.equal(text, [...CONTENT_CHUNKS, DONE].join(''), 'every other event intact, the usage-only chunk dropped');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, LOGGED_USAGE);
});

t.test('an SSE answer with a content-length reaches the client without it, since the usage chunk is dropped', async (t) => {
  const { post } = await usageScenario(t, { withLength: true });
  const res = await post({ stream: true });
  t.equal(res.headers.get('content-length'), null, 'the upstream\'s length no longer holds');
  t.equal(await res.text(), [...CONTENT_CHUNKS, DONE].join(''), 'every other event intact');
});

t.test('the events an upstream read brings reach the client in one HTTP chunk, not one per event', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    // After the gateway is relaying: the events come as one read, one HTTP chunk each.
    setTimeout(() => {
      for (const chunk of [...CONTENT_CHUNKS, USAGE_CHUNK, DONE]) res.write(chunk);
      res.end();
    }, 50);
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const body = JSON.stringify({ model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const { port } = new URL(gw.url);
  // A raw connection, so that the response's chunk framing is seen as sent.
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keyValue}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  const payload = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const chunks: string[] = [];
  for (let at = 0; ; ) {
    const lineEnd = payload.indexOf('\r\n', at);
    const size = parseInt(payload.slice(at, lineEnd), 16);
    if (size === 0) break;
    chunks.push(payload.slice(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  t.equal(chunks.join(''), [...CONTENT_CHUNKS, DONE].join(''), 'every event but the usage chunk, byte for byte');
  t.equal(chunks.length, 1, `one chunk for ${CONTENT_CHUNKS.length + 1} events`);
});

t.test('completions stream with other stream_options: they are kept and include_usage is added', async (t) => {
  const { upstream, post } = await usageScenario(t);
  const res = await post({ stream: true, stream_options: { include_obfuscation: false } });
  const text = await res.text();
  const sent = JSON.parse(upstream.requests[0]!.body.toString());
  t.same(sent.stream_options, { include_obfuscation: false, include_usage: true });
  t.notMatch(text, /"usage"/, 'the client did not ask for usage and does not get it');
});

t.test('completions stream where the client asked for usage: forwarded unchanged, usage chunk passed on and logged', async (t) => {
  const { gw, upstream, post } = await usageScenario(t);
  const res = await post({ stream: true, stream_options: { include_usage: true } });
  const text = await res.text();
  const sent = JSON.parse(upstream.requests[0]!.body.toString());
  t.same(sent.stream_options, { include_usage: true });
  t.equal(text, [...CONTENT_CHUNKS, USAGE_CHUNK, DONE].join(''), 'byte for byte');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, LOGGED_USAGE);
});

t.test('a non-streaming completions request gets no stream_options', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"choices":[]}');
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'team-m', messages: [] }) });
  await res.text();
  t.notOk('stream_options' in JSON.parse(upstream.requests[0]!.body.toString()));
});

t.test('a client that leaves before the upstream answers aborts the upstream request; the log says client_aborted', async (t) => {
  const upstreamClosed = deferred();
  const upstreamGotIt = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
    upstreamGotIt.resolve();
    // never answers
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const controller = new AbortController();
  const pending = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: controller.signal, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [] }) }).catch(() => undefined);
  await withTimeout(upstreamGotIt.promise, 5000, 'the request to reach the upstream');
  controller.abort();
  await pending;
  await withTimeout(upstreamClosed.promise, 5000, 'the upstream request to be aborted');
  const record = await eventually(async () => {
    await gw.logs.flush();
    const page = await gw.logs.list({ access_key_id: key.id }, { limit: 5 });
    return page.items[0];
  }, 'the log record');
  t.equal(record.client_aborted, true);
  t.equal(record.attempt_count, 1);
  t.match(record, { status: 499, error_code: 'client_closed', channel: 'ch02', upstream_model: 'vendor-m', route_mode: 'N' }, 'the record names the route it was on');
  t.not(record.credential_id, null);
});

t.test('a client that leaves while a stream\'s status and headers are still held (nothing reached it) is recorded 499, not as a success', async (t) => {
  const upstreamClosed = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
    // A 200 stream whose first event never comes: the gateway holds its headers for it.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  });
  // Observed, not changed: the moment the gateway starts relaying the upstream's reply (its headers held).
  const relaying = deferred();
  const exchange = gw.upstream.exchange.bind(gw.upstream);
  gw.upstream.exchange = (request) => {
    const sent = exchange(request);
    sent.reply = sent.reply.then((reply) => {
      const consume = reply.consume.bind(reply);
      reply.consume = (sink) => {
        consume(sink);
        relaying.resolve();
      };
      return reply;
    });
    return sent;
  };
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { hostname, port } = new URL(gw.url);
  let answered = false;
  const req = request({ host: hostname, port, path: '/v1/chat/completions', method: 'POST', headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' } }, () => (answered = true));
  req.on('error', () => undefined);
  req.end(JSON.stringify({ model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  await withTimeout(relaying.promise, 5000, 'the gateway to relay the upstream reply');
  t.equal(answered, false, 'the client has no status yet');
  req.destroy();
  await withTimeout(upstreamClosed.promise, 5000, 'the upstream request to be aborted');
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 5 })).items[0];
  }, 'the log record');
  t.match(record, { status: 499, error_code: 'client_closed', client_aborted: true, channel: 'ch02' }, 'as a client that left before the answer began');
  t.match(record.attempts, [{ status: 200, error_code: 'client_closed' }], 'the attempt got the upstream\'s 200');
});

// ---- generate style without alt=sse: the stream is one JSON array --------------------------
// Its usage is in the elements, and a stall must end the array with an error element rather
// than cut the connection mid-array (src/dataplane/relay/relay-json-array.ts).

async function jsonArrayScenario(t: Test, then: (res: ServerResponse) => void, gatewayOptions = {}) {
  const upstreamClosed = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    res.write(`[{"candidates": [{"content": {"parts": [{"text": "first-element"}]}}]}`);
    then(res);
  }, gatewayOptions);
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await fetch(`${gw.url}/v1beta/models/team-m:streamGenerateContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: '{"contents":[]}' });
  return { gw, res, upstreamClosed };
}

/** The client's whole answer, checked to be one complete JSON array; undefined when it is not. */
async function readJsonArray(t: Test, res: Response): Promise<unknown[] | undefined> {
  const text = await withTimeout(res.text().catch((err: Error) => `<client stream failed: ${err.message}>`), 15_000, 'the client stream to end');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  t.ok(Array.isArray(parsed), 'the client receives a complete JSON array', { text });
  return Array.isArray(parsed) ? parsed : undefined;
}

t.test('generate JSON-array stream: usage is read from the elements', async (t) => {
  const { gw, res } = await jsonArrayScenario(t, (res) => {
    res.end(`,\r\n{"candidates": [{"content": {"parts": [{"text": "b"}]}}], "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}}]`);
  });
  const text = await res.text();
  t.same(JSON.parse(text).length, 2, 'the array arrives whole');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, { input_tokens: 9, output_tokens: 5, cached_tokens: 0, reasoning_tokens: 2 });
});

t.test('generate JSON-array stream: an error element from the upstream reaches the client as sent and is logged as upstream_stream_error', async (t) => {
  const errorElement = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } };
  const { gw, res } = await jsonArrayScenario(t, (res) => {
    setTimeout(() => res.end(`,\r\n${JSON.stringify(errorElement)}]`), 20);
  });
  t.equal(res.status, 200);
  const parsed = await readJsonArray(t, res);
  t.same(parsed?.at(-1), errorElement, 'its last element is the upstream\'s, unchanged');
  t.equal(parsed?.length, 2, 'no element added');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'upstream_stream_error' });
});

t.test('generate JSON-array stream: an element whose text merely says "error" is logged as a success', async (t) => {
  const { gw, res } = await jsonArrayScenario(t, (res) => {
    setTimeout(() => res.end(`,\r\n${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'no "error": here' }] }, finishReason: 'STOP' }] })}]`), 20);
  });
  const parsed = await readJsonArray(t, res);
  t.equal(parsed?.length, 2);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});

t.test('generate JSON-array stream: a stall ends the array cleanly with an error element', async (t) => {
  const { gw, res, upstreamClosed } = await jsonArrayScenario(
    t,
    () => {
      /* stalls */
    },
    { streamIdleTimeoutMs: 300 },
  );
  t.equal(res.status, 200);
  const parsed = await readJsonArray(t, res);
  t.match(parsed?.at(-1), { error: { details: [{ reason: 'upstream_idle_timeout' }] } }, 'its last element is the error');
  await withTimeout(upstreamClosed.promise, 5000, 'the stalled upstream request to be closed');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.error_code, 'upstream_idle_timeout');
});

t.test('generate JSON-array stream: a break ends the array cleanly with an error element', async (t) => {
  const { gw, res } = await jsonArrayScenario(t, (res) => {
    setTimeout(() => res.socket?.destroy(), 50);
  });
  t.equal(res.status, 200);
  const parsed = await readJsonArray(t, res);
  const elements = parsed ?? [];
  t.equal(elements.length, 2, 'the element sent before the break, then the error');
  t.match(elements.at(-1), { error: { details: [{ reason: 'upstream_stream_broken' }] } }, 'its last element is the error');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.error_code, 'upstream_stream_broken');
});

// Gemini's usageMetadata is cumulative, and an element is only handed over at the comma or `]`
// after it: the last element before a stall or break is whole at the client and must count.
for (const [ending, end, code] of [
  ['a stall', () => undefined, 'upstream_idle_timeout'],
  ['a break', (res: ServerResponse) => setTimeout(() => res.socket?.destroy(), 50), 'upstream_stream_broken'],
] as const) {
  t.test(`generate JSON-array stream: the usage of the last whole element before ${ending} is recorded`, async (t) => {
    const { gw, res } = await jsonArrayScenario(
      t,
      (res) => {
        res.write(`,\r\n{"candidates": [{"content": {"parts": [{"text": "b"}]}}], "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 7}}`);
        end(res);
      },
      { streamIdleTimeoutMs: 300 },
    );
    const parsed = await readJsonArray(t, res);
    t.equal(parsed?.length, 3, 'both elements, then the error');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.error_code, code);
    t.same(record.usage, { input_tokens: 9, output_tokens: 7, cached_tokens: 0, reasoning_tokens: 0 }, 'the held element\'s usageMetadata');
  });
}

// The first element jsonArrayScenario's upstream sends, as the client must get it back.
const FIRST_ELEMENT = { candidates: [{ content: { parts: [{ text: 'first-element' }] } }] };

// Google's canonical status for each failure (docs/data-plane-internals.md): a deadline for a
// silent upstream, unavailable for a broken one.
const STALL_AND_BREAK = [
  ['a stall', (_res: ServerResponse) => undefined, 'upstream_idle_timeout', 'DEADLINE_EXCEEDED'],
  ['a break', (res: ServerResponse) => setTimeout(() => res.socket?.destroy(), 50), 'upstream_stream_broken', 'UNAVAILABLE'],
] as const;

for (const [ending, end, code, status] of STALL_AND_BREAK) {
  t.test(`generate JSON-array stream: ${ending} inside an element ends the array with the error element after the elements the client got whole`, async (t) => {
    const { gw, res } = await jsonArrayScenario(
      t,
      // Ended once the gateway has taken the half element in (a timer could fire first on a busy machine).
      (res) => res.write('\n,\r\n{"cand', () => end(res)),
      { streamIdleTimeoutMs: 300 },
    );
    t.equal(res.status, 200);
    const parsed = await readJsonArray(t, res);
    t.equal(parsed?.length, 2, 'the whole element, then the error; nothing of the half one');
    t.same(parsed?.[0], FIRST_ELEMENT, 'the whole element as the upstream sent it');
    t.match(parsed?.at(-1), { error: { status, details: [{ reason: code }] } }, 'its last element is the error');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: code });
  });
}

for (const [where, rest] of [
  ['after a whole element', ''],
  ['inside an element', ',\r\n{"cand'],
] as const) {
  t.test(`generate JSON-array stream: an array that ends ${where} before its \`]\` is closed with an error element and recorded as broken`, async (t) => {
    const { gw, res } = await jsonArrayScenario(t, (res) => res.end(rest));
    t.equal(res.status, 200);
    const parsed = await readJsonArray(t, res);
    t.equal(parsed?.length, 2, 'the whole element, then the error');
    t.same(parsed?.[0], FIRST_ELEMENT);
    t.match(parsed?.at(-1), { error: { status: 'UNAVAILABLE', details: [{ reason: 'upstream_stream_broken' }] } });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
  });
}

// The upstream's own error element names the failure even when the upstream then ends before
// `]`; the client's array is still closed (the error element a break gets, and `]`).
for (const [where, rest] of [
  ['right after it', ''],
  ['after its comma', ',\r\n'],
] as const) {
  t.test(`generate JSON-array stream: an upstream error element, then an end ${where} before \`]\`, is recorded as upstream_stream_error and the array closed`, async (t) => {
    const errorElement = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } };
    const { gw, res } = await jsonArrayScenario(t, (res) => res.end(`,\r\n${JSON.stringify(errorElement)}${rest}`));
    t.equal(res.status, 200);
    const parsed = await readJsonArray(t, res);
    t.equal(parsed?.length, 3, 'the element, the upstream\'s error element, then the closing error element');
    t.same(parsed?.slice(0, 2), [FIRST_ELEMENT, errorElement], 'the upstream\'s elements as sent');
    t.match(parsed?.at(-1), { error: { status: 'UNAVAILABLE', details: [{ reason: 'upstream_stream_broken' }] } });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: 'upstream_stream_error' });
  });
}

// ---- a stall or break after the stream is complete ----------------------------------------
// The client already has the whole answer: it gets no error event (an SDK would throw on it),
// its stream ends normally, and the request counts as a success.

for (const [ending, end] of STALL_AND_BREAK) {
  for (const style of STYLES.filter((s) => s.name !== 'generate')) {
    t.test(`${style.name}: ${ending} after the stream's final event ends the client stream cleanly, without an error event`, async (t) => {
      // style.innocent ends with the style's final event ([DONE], response.incomplete, message_stop).
      const s = await scenario(t, style, (res) => res.write(style.innocent, () => end(res)), { streamIdleTimeoutMs: 300 });
      const res = await send(s, style);
      t.equal(res.status, 200);
      const text = await withTimeout(readIncrementally(res).catch((err: Error) => `<client stream failed: ${err.message}>`), 10_000, 'the client stream to end');
      t.equal(text, style.first + style.innocent, 'exactly what the upstream sent, no event added');
      const record = await waitForLog(s.gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 200, error_code: null, client_aborted: false });
    });
  }

  t.test(`generate JSON-array stream: ${ending} after the array's \`]\` ends the client stream cleanly`, async (t) => {
    const { gw, res } = await jsonArrayScenario(t, (res) => res.write(']', () => end(res)), { streamIdleTimeoutMs: 300 });
    const parsed = await readJsonArray(t, res);
    t.same(parsed, [FIRST_ELEMENT], 'the array as the upstream sent it, no element added');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null });
  });
}

t.test('a CRLF stream split between CR and LF just before the usage chunk loses only that chunk\'s bytes', async (t) => {
  const crlf = (event: string) => event.replace(/\n/g, '\r\n');
  const content = crlf(CONTENT_CHUNKS[0]!);
  const usage = crlf(USAGE_CHUNK);
  const done = crlf(DONE);
  const pieces = [content.slice(0, -1), `${content.slice(-1)}${usage}`, done];
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Apart in time, so that the gateway reads them apart.
    for (const piece of pieces) {
      res.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    res.end();
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [], stream: true }) });
  t.equal(await res.text(), content + done, 'the content event with its whole CRLF, then [DONE]');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, LOGGED_USAGE);
});

// ---- plain (non-streamed) answers: the same stalls, on a body relayed chunk by chunk --------

async function plainScenario(t: Test, then: (res: ServerResponse) => void, gatewayOptions = {}) {
  const upstreamClosed = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
    then(res);
  }, gatewayOptions);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-plain'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'team-m', messages: [] }));
  });
  response.on('error', () => {});
  return { gw, response, upstreamClosed };
}

t.test('a client that stops reading a plain answer has its connection closed and the upstream request aborted: client_stalled', async (t) => {
  const { gw, response, upstreamClosed } = await plainScenario(
    t,
    (res) => {
      // A large JSON answer (a b64 image, say) that keeps coming as fast as the gateway takes it.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[{"b64_json":"');
      const piece = 'QUJD'.repeat(16 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    },
    { streamIdleTimeoutMs: 300 },
  );
  response.pause();
  await withTimeout(upstreamClosed.promise, 10_000, 'the upstream request to be ended');
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: 'client_stalled', client_aborted: false }, 'the client, not the upstream, stopped the answer');
  response.destroy();
});

t.test('a plain answer whose upstream goes silent mid-body is recorded upstream_idle_timeout, not as broken', async (t) => {
  const { gw, response } = await plainScenario(
    t,
    (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"id":"c1",');
    },
    { streamIdleTimeoutMs: 300, headersTimeoutMs: 1000 },
  );
  const outcome = await withTimeout(
    new Promise<string>((resolve) => {
      response.on('end', () => resolve('ended'));
      response.on('close', () => resolve('cut'));
      response.resume();
    }),
    15_000,
    'the client answer to end',
  );
  t.equal(outcome, 'cut', 'nothing valid can follow half a body');
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: 'upstream_idle_timeout' });
});

t.test('an interim 103 Early Hints before the upstream\'s answer is skipped: the client gets the answer and its usage is recorded', async (t) => {
  const answer = JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } });
  // Raw bytes: an interim answer, then the final one, on the same request.
  const upstream = createNetServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n');
      socket.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(answer)}\r\nconnection: close\r\n\r\n${answer}`);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-103'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [] }) });
  t.equal(res.status, 200);
  t.equal(await res.text(), answer, 'the final answer, as sent');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null, usage: { input_tokens: 4, output_tokens: 2 } });
});
