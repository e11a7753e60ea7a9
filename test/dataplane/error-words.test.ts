import t, { type Test } from 'tap';
import { request, type ServerResponse } from 'node:http';
import { startDataPlane, startUpstream, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, closedPortUrl, createKey, readIncrementally, seedGroup, sseBlocks, sseData, withTimeout } from './helpers/dataplane-scenarios.ts';

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
      const event = sseData(blocks[1]!);
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

// ---- one real refusal per status of the error table, in each style ---------------------------
// The words are written out here, not read from the gateway's table. Most are the vendor's own:
// OpenAI's `invalid_request_error` and its 5xx `server_error`, Anthropic's types
// (`request_too_large`, `overloaded_error`, `timeout_error`...), Google's canonical status
// names. The completions rows for 401, 403, 404 and 429 are not OpenAI's (its own bodies say
// `invalid_request_error` with a code such as `invalid_api_key` or `model_not_found`) but the
// gateway's choice, the messages style's words, documented in docs/data-plane.md, Errors: the
// table is chosen so that each SDK raises its typed error (decisions.md §6), and the openai
// SDK picks that class by the status alone, whatever the type says.
// 500 has no refusal to produce it (internal_error is a bug of ours), nor 499 (client_closed:
// no client reads it).

interface RefusalStyle {
  protocol: string;
  channel: string;
  path: (model: string) => string;
  body: (model: string) => Record<string, unknown>;
  /** The vendor's words for a status, and the gateway's reason, read from an error body. */
  read: (body: any) => { words: unknown; reason: unknown };
  words: Record<number, unknown>;
}

const REFUSAL_STYLES: RefusalStyle[] = [
  {
    protocol: 'x-completions',
    channel: 'ch02',
    path: () => '/v1/chat/completions',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }),
    read: (b) => ({ words: b.error?.type, reason: b.error?.code }),
    words: {
      400: 'invalid_request_error',
      401: 'authentication_error',
      403: 'permission_error',
      404: 'not_found_error',
      405: 'invalid_request_error',
      408: 'invalid_request_error',
      413: 'invalid_request_error',
      415: 'invalid_request_error',
      429: 'rate_limit_error',
      501: 'server_error',
      502: 'server_error',
      503: 'server_error',
      504: 'server_error',
    },
  },
  {
    protocol: 'x-messages',
    channel: 'ch14',
    path: () => '/v1/messages',
    body: (model) => ({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    read: (b) => ({ words: b.type === 'error' ? b.error?.type : undefined, reason: b.error?.code }),
    words: {
      400: 'invalid_request_error',
      401: 'authentication_error',
      403: 'permission_error',
      404: 'not_found_error',
      405: 'invalid_request_error',
      408: 'timeout_error',
      413: 'request_too_large',
      415: 'invalid_request_error',
      429: 'rate_limit_error',
      501: 'api_error',
      502: 'api_error',
      503: 'overloaded_error',
      504: 'timeout_error',
    },
  },
  {
    protocol: 'x-generate',
    channel: 'ch15',
    path: (model) => `/v1beta/models/${model}:generateContent`,
    body: () => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    read: (b) => ({ words: [b.error?.code, b.error?.status], reason: b.error?.details?.[0]?.reason }),
    words: {
      400: [400, 'INVALID_ARGUMENT'],
      401: [401, 'UNAUTHENTICATED'],
      403: [403, 'PERMISSION_DENIED'],
      404: [404, 'NOT_FOUND'],
      405: [405, 'INVALID_ARGUMENT'],
      408: [408, 'DEADLINE_EXCEEDED'],
      413: [413, 'INVALID_ARGUMENT'],
      415: [415, 'INVALID_ARGUMENT'],
      429: [429, 'RESOURCE_EXHAUSTED'],
      501: [501, 'UNIMPLEMENTED'],
      502: [502, 'UNAVAILABLE'],
      503: [503, 'UNAVAILABLE'],
      504: [504, 'DEADLINE_EXCEEDED'],
    },
  },
];

const MAX_BODY_BYTES = 4096;

interface RawAnswer {
  status: number;
  body: any;
}

/** One request over its own connection, its body sent as given; `partial` sends it without ending the request (a longer declared body), then waits. */
function exchange(url: string, o: { method?: string; headers: Record<string, string>; body?: string; partial?: boolean }): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'POST', headers: o.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        req.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
        } catch {
          reject(new Error(`not a JSON error body (${res.statusCode}): ${text}`));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (o.partial) req.write(o.body ?? '');
    else req.end(o.body);
  });
}

interface RefusalRig {
  url: string;
  style: RefusalStyle;
  keyValue: string;
  /** A key of this gateway that may not use the style's protocol. */
  otherProtocolKey: string;
  /** A key whose quota (one request in all) the rig has used up. */
  spentKey: string;
  headers(keyValue?: string): Record<string, string>;
}

/** Each status and the real refusal that produces it, through the gateway's front door. */
const REFUSALS: { status: number; code: string; how: string; send: (r: RefusalRig) => Promise<RawAnswer> }[] = [
  { status: 400, code: 'invalid_json', how: 'a body that is not JSON', send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: r.headers(), body: '{"model":' }) },
  { status: 401, code: 'access_key_invalid', how: 'an unknown access key', send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: r.headers('sk-not-a-key'), body: JSON.stringify(r.style.body('team-m')) }) },
  { status: 403, code: 'protocol_not_allowed', how: "a key without the style's protocol", send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: r.headers(r.otherProtocolKey), body: JSON.stringify(r.style.body('team-m')) }) },
  { status: 404, code: 'model_not_visible', how: 'a model no Group serves', send: (r) => exchange(`${r.url}${r.style.path('no-such-m')}`, { headers: r.headers(), body: JSON.stringify(r.style.body('no-such-m')) }) },
  { status: 405, code: 'method_not_allowed', how: 'PUT on a POST endpoint', send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { method: 'PUT', headers: r.headers(), body: JSON.stringify(r.style.body('team-m')) }) },
  {
    status: 408,
    code: 'request_timeout',
    how: 'a body that goes silent before its declared end',
    send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: { ...r.headers(), 'content-length': '100' }, body: '{"mo', partial: true }),
  },
  {
    status: 413,
    code: 'request_too_large',
    how: 'a body over the largest accepted',
    send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: r.headers(), body: JSON.stringify({ ...r.style.body('team-m'), padding: 'x'.repeat(MAX_BODY_BYTES * 2) }) }),
  },
  { status: 415, code: 'unsupported_content_encoding', how: 'a compressed body', send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: { ...r.headers(), 'content-encoding': 'gzip' }, body: JSON.stringify(r.style.body('team-m')) }) },
  { status: 429, code: 'quota_exceeded', how: 'a key past its quota', send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: r.headers(r.spentKey), body: JSON.stringify(r.style.body('team-m')) }) },
  {
    status: 501,
    code: 'unsupported_transfer_coding',
    how: 'a transfer coding other than chunked',
    send: (r) => exchange(`${r.url}${r.style.path('team-m')}`, { headers: { ...r.headers(), 'transfer-encoding': 'gzip, chunked' }, body: '0\r\n\r\n' }),
  },
  { status: 502, code: 'upstream_unreachable', how: "a Group whose upstream's port is closed", send: (r) => exchange(`${r.url}${r.style.path('gone-m')}`, { headers: r.headers(), body: JSON.stringify(r.style.body('gone-m')) }) },
  { status: 503, code: 'no_available_credential', how: 'a Group with no credential', send: (r) => exchange(`${r.url}${r.style.path('empty-m')}`, { headers: r.headers(), body: JSON.stringify(r.style.body('empty-m')) }) },
  { status: 504, code: 'upstream_timeout', how: 'an upstream that never sends its headers', send: (r) => exchange(`${r.url}${r.style.path('slow-m')}`, { headers: r.headers(), body: JSON.stringify(r.style.body('slow-m')) }) },
];

for (const style of REFUSAL_STYLES) {
  t.test(`${style.protocol}: every status the gateway refuses with is named in the vendor's words`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => writeOk(res), { maxBodyBytes: MAX_BODY_BYTES, streamIdleTimeoutMs: IDLE_MS, headersTimeoutMs: IDLE_MS });
    const silent = await startUpstream(() => {
      /* never answers */
    });
    t.teardown(() => silent.close());
    const models = (external: string) => [{ external, upstream: `vendor-${external}` }];
    await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: models('team-m'), secrets: ['sk-up'] });
    await seedGroup(gw.store, { channel: style.channel, baseUrl: await closedPortUrl(), models: models('gone-m'), secrets: ['sk-gone'] });
    await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: models('empty-m'), secrets: [] });
    await seedGroup(gw.store, { channel: style.channel, baseUrl: silent.url, models: models('slow-m'), secrets: ['sk-slow'] });
    const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
    const other = await createKey(gw.store, { protocols: [style.protocol === 'x-completions' ? 'x-messages' : 'x-completions'] });
    const spent = await createKey(gw.store, { protocols: [style.protocol], quota: { total: { requests: 1 } } });
    const headers = (k = keyValue) => ({ ...clientAuthHeaders(style.protocol, k), 'content-type': 'application/json' });
    const used = await exchange(`${gw.url}${style.path('team-m')}`, { headers: headers(spent.keyValue), body: JSON.stringify(style.body('team-m')) });
    t.equal(used.status, 200, "the quota's one request");
    await gw.logs.flush();
    const rig: RefusalRig = { url: gw.url, style, keyValue, otherProtocolKey: other.keyValue, spentKey: spent.keyValue, headers };

    for (const refusal of REFUSALS) {
      const answer = await withTimeout(refusal.send(rig), BOUND_MS, `the ${refusal.status} answer`);
      t.equal(answer.status, refusal.status, `${refusal.how}: ${refusal.status}`);
      const { words, reason } = style.read(answer.body);
      t.equal(reason, refusal.code, `${refusal.status}: the refusal meant`);
      t.same(words, style.words[refusal.status], `${refusal.status} in the vendor's words`, { body: answer.body });
    }
  });
}

function writeOk(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
}
