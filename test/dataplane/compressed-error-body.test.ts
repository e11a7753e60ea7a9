import { createServer, request, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, constants, createGzip, deflateSync, gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, credentialView, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { realtimeRoute } from './helpers/ws-upstream.ts';

// The upstream credential never reaches a client (issue 4), even when an upstream, or a relay
// in front of it, ignores `accept-encoding: identity` and compresses an error answer that
// echoes the key, or echoes it percent-encoded or with `/` JSON-escaped as `\/`.

// `/`, `+` and `=` are what encodeURIComponent and JSON's `\/` change.
const SECRET = 'sk-up/stream+key=abcdef123456';
// What a data-plane client sees (maskedForClients): `***`, then the secret's last four characters when it has 24 or more.
const MASKED = '***3456';
const ECHO_FORMS = { raw: SECRET, percent: encodeURIComponent(SECRET), slash: SECRET.replaceAll('/', '\\/') };

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The bytes as they came over the wire: no client decodes them. */
  body: Buffer;
  /** The answer broke off before its end. */
  broken: boolean;
}

/** A chat request through the gateway, its answer read as raw bytes. */
function post(url: string, keyValue: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const body = chatBody('team-chat');
    const req = request(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      const done = (broken: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), broken });
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(false));
      res.on('error', () => done(true));
      res.on('aborted', () => done(true));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function route(t: Test, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [SECRET] });
  return { upstream, gw, keyValue };
}

const echoBody = (auth: string) => JSON.stringify({ error: { message: `Incorrect API key provided: ${auth}`, type: 'invalid_request_error' } });

for (const c of [
  { coding: 'gzip', encode: (b: string) => gzipSync(b) },
  { coding: 'x-gzip', encode: (b: string) => gzipSync(b) },
  { coding: 'br', encode: (b: string) => brotliCompressSync(b) },
  { coding: 'deflate', encode: (b: string) => deflateSync(b) },
]) {
  t.test(`a ${c.coding} 401 echoing the credential is decoded, masked, and sent without content-encoding`, async (t) => {
    const { upstream, gw, keyValue } = await route(t, (req, res) => {
      res.writeHead(401, { 'content-type': 'application/json', 'content-encoding': c.coding });
      res.end(c.encode(echoBody(String(req.headers.authorization))));
    });
    const answer = await post(gw.url, keyValue);
    t.equal(upstream.requests[0]?.headers.authorization, `Bearer ${SECRET}`, 'the upstream got the credential it echoes');
    t.equal(answer.status, 401);
    t.equal(answer.headers['content-encoding'], undefined, 'no content-encoding: the body goes decoded');
    t.equal(answer.headers['content-length'], String(answer.body.length), 'content-length is the decoded, masked body\'s');
    t.equal(answer.body.toString(), echoBody(`Bearer ${MASKED}`), 'the upstream\'s body, the secret masked');
  });
}

t.test('a gzip event-stream error is decoded and masked as it streams, a secret split across writes included', async (t) => {
  const event = (auth: string) => `event: error\ndata: ${echoBody(auth)}\n\n`;
  const { gw, keyValue } = await route(t, async (req, res) => {
    res.writeHead(400, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    const text = event(String(req.headers.authorization)) + event(String(req.headers.authorization));
    const cut = text.indexOf(SECRET) + 9;
    const gzip = createGzip();
    gzip.pipe(res);
    gzip.write(text.slice(0, cut));
    // Flushed and given time: the gateway gets the secret's two halves in separate reads.
    await new Promise<void>((r) => gzip.flush(constants.Z_SYNC_FLUSH, () => r()));
    await new Promise((r) => setTimeout(r, 50));
    gzip.end(text.slice(cut));
  });
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 400);
  t.notOk(answer.broken, 'the stream ends normally');
  t.equal(answer.headers['content-encoding'], undefined);
  t.equal(answer.headers['content-length'], undefined, 'streamed: no length');
  t.equal(answer.body.toString(), event(`Bearer ${MASKED}`) + event(`Bearer ${MASKED}`));
});

t.test('a gzip error body larger than the 1 MiB read whole: its first MiB and the rest streamed are masked', async (t) => {
  const filler = 'x'.repeat(1024 * 1024);
  const body = (auth: string) => `{"error":{"message":"${auth}","detail":"${filler}","again":"${auth}"}}`;
  const { gw, keyValue } = await route(t, (req, res) => {
    // Chunked, no content-length: read whole until it turns out longer.
    res.writeHead(400, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(gzipSync(body(String(req.headers.authorization))));
  });
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 400);
  t.equal(answer.headers['content-encoding'], undefined);
  t.notOk(answer.body.includes(SECRET), 'the secret is nowhere in the body');
  t.ok(answer.body.toString() === body(`Bearer ${MASKED}`), 'the whole decoded body, both echoes masked');
});

t.test('an error in a coding the gateway cannot decode is answered with the gateway\'s own 502, none of its bytes', async (t) => {
  const { gw, keyValue } = await route(t, (req, res) => {
    res.writeHead(401, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    // Whatever zstd would make of it: bytes the gateway cannot read, so cannot mask.
    res.end(echoBody(String(req.headers.authorization)));
  });
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 502);
  t.equal(JSON.parse(answer.body.toString()).error.code, 'upstream_unreachable');
  t.notOk(answer.body.includes(SECRET), 'no upstream byte passed on');
  t.equal(answer.headers['content-encoding'], undefined);
});

t.test('a gzip error that is not gzip is answered with the gateway\'s own 502, not a crash nor a 500', async (t) => {
  // A 400, then a 401 (read while failover is weighed; it puts the credential aside, so it comes last).
  const statuses = [400, 401];
  const { gw, keyValue } = await route(t, (req, res) => {
    res.writeHead(statuses.shift()!, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(echoBody(String(req.headers.authorization)));
  });
  for (const pass of ['400', '401, and the gateway still serves']) {
    const answer = await post(gw.url, keyValue);
    t.equal(answer.status, 502, pass);
    t.equal(JSON.parse(answer.body.toString()).error.code, 'upstream_unreachable', pass);
    t.notOk(answer.body.includes(SECRET), `${pass}: no upstream byte passed on`);
  }
});

// An answer the gateway cannot decode is that attempt's failure: the attempt keeps the
// upstream's status with the gateway's code, and the status is weighed for failover as usual.

const SECOND = 'sk-second+key=987654';
// SECOND is shorter than 24 characters: none of it is shown.
const SECOND_MASKED = '***';

async function pool(t: Test, secrets: string[], respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], secrets });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  return { upstream, gw, group, credentials, keyValue };
}

t.test('a zstd 500 is that attempt\'s failure: the next credential answers, the record lists both attempts', async (t) => {
  const { upstream, gw, group, credentials, keyValue } = await pool(t, [SECRET, SECOND], (req, res) => {
    if (req.headers.authorization !== `Bearer ${SECRET}`) return void res.writeHead(200, { 'content-type': 'application/json' }).end(completionJson('vendor-chat'));
    res.writeHead(500, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    res.end(echoBody(String(req.headers.authorization)));
  });
  const [first, second] = credentials as [(typeof credentials)[0], (typeof credentials)[0]];
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 200, 'the second credential\'s answer');
  t.same(upstream.requests.map((r) => r.headers.authorization), [`Bearer ${SECRET}`, `Bearer ${SECOND}`], 'both credentials tried, in order');
  const record = await waitForLog(gw, String(answer.headers['x-switchyard-request-id']));
  t.match(record, {
    status: 200,
    error_code: null,
    credential_id: String(second.id),
    attempt_count: 2,
    attempts: [
      { credential_id: String(first.id), group_id: String(group.id), status: 500, error_code: 'upstream_unreachable' },
      { credential_id: String(second.id), status: 200, error_code: null },
    ],
  });
  t.equal((await credentialView(gw.store, group.id, first.id)).state, 'cooldown', 'the 500 cools the first credential down, as any 500 does');
});

for (const type of ['application/json', 'text/event-stream']) {
  t.test(`a single credential's zstd 400 (${type}) is answered 502, the record naming group, channel and credential`, async (t) => {
    const { gw, group, credentials, keyValue } = await pool(t, [SECRET], (req, res) => {
      res.writeHead(400, { 'content-type': type, 'content-encoding': 'zstd' });
      res.end(echoBody(String(req.headers.authorization)));
    });
    const answer = await post(gw.url, keyValue);
    t.equal(answer.status, 502);
    t.equal(JSON.parse(answer.body.toString()).error.code, 'upstream_unreachable');
    t.notOk(answer.body.includes(SECRET), 'no upstream byte passed on');
    const record = await waitForLog(gw, String(answer.headers['x-switchyard-request-id']));
    t.match(record, {
      status: 502,
      error_code: 'upstream_unreachable',
      group_id: String(group.id),
      channel: 'ch02',
      credential_id: String(credentials[0]!.id),
      attempt_count: 1,
      attempts: [{ credential_id: String(credentials[0]!.id), status: 400, error_code: 'upstream_unreachable' }],
    });
    t.equal((await credentialView(gw.store, group.id, credentials[0]!.id)).state, 'active', 'a 400 says nothing against the credential');
  });
}

t.test('a gzip event-stream error that stops decoding breaks off with the stream\'s error event, its bytes not passed on', async (t) => {
  const { gw, keyValue } = await route(t, async (req, res) => {
    res.writeHead(400, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    res.end(`event: error\ndata: ${echoBody(String(req.headers.authorization))}\n\n`);
  });
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 400, 'the upstream\'s status: it went out before the body failed');
  t.notOk(answer.body.includes(SECRET), 'no upstream byte passed on');
  const events = answer.body.toString().split('\n\n').filter((e) => e !== '');
  t.equal(events.length, 1, 'only the gateway\'s event');
  t.equal(JSON.parse(events[0]!.replace(/^data: /, '')).error.code, 'upstream_stream_broken');
});

for (const [form, echoed] of Object.entries({ percent: ECHO_FORMS.percent, slash: ECHO_FORMS.slash })) {
  t.test(`a secret echoed ${form === 'percent' ? 'percent-encoded' : 'with / escaped as \\/'} is masked, read whole and split across streamed writes`, async (t) => {
    const text = `{"error":{"message":"retry at https://api.invalid/v1?key=${echoed}"}}`;
    const expected = `{"error":{"message":"retry at https://api.invalid/v1?key=${MASKED}"}}`;
    t.not(echoed, SECRET, 'the echo differs from the raw secret');
    let streamed = false;
    const { gw, keyValue } = await route(t, async (_req, res) => {
      if (!streamed) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-echo': echoed });
        return void res.end(text);
      }
      res.writeHead(400, { 'content-type': 'text/event-stream' });
      const cut = text.indexOf(echoed) + Math.floor(echoed.length / 2);
      res.write(`data: ${text.slice(0, cut)}`);
      await new Promise((r) => setTimeout(r, 50));
      res.end(`${text.slice(cut)}\n\n`);
    });
    const whole = await post(gw.url, keyValue);
    t.equal(whole.body.toString(), expected, 'read whole');
    t.equal(whole.headers['x-echo'], MASKED, 'a header value too');
    streamed = true;
    const split = await post(gw.url, keyValue);
    t.equal(split.body.toString(), `data: ${expected}\n\n`, 'streamed, split across two writes');
  });
}

/** An upgrade to the gateway, its non-101 answer read raw. */
function upgradeAnswer(wsUrl: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(wsUrl.replace('ws', 'http'), { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), broken: false }));
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}

/** A WebSocket upstream whose handshakes are answered `status`, in the coding `codingFor` picks by the credential. */
async function refusingWsUpstream(t: Test, status: string, codingFor: (authorization: string) => string): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket) => {
    const coding = codingFor(String(req.headers.authorization));
    const plain = echoBody(String(req.headers.authorization));
    const body = coding === 'gzip' ? gzipSync(plain) : Buffer.from(plain);
    socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-encoding: ${coding}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`), body]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a WebSocket handshake answered with a gzip 400 echoing the credential: decoded and masked; a zstd one refused, the record naming the route', async (t) => {
  let coding = 'zstd';
  const { gw, group, wsUrl } = await realtimeRoute(t, await refusingWsUpstream(t, '400 Bad Request', () => coding), { upstreamKeys: [SECRET] });
  const unknown = await upgradeAnswer(wsUrl);
  t.equal(unknown.status, 502);
  t.equal(JSON.parse(unknown.body.toString()).error.code, 'upstream_unreachable');
  t.notOk(unknown.body.includes(SECRET), 'no upstream byte passed on');
  const record = await waitForLog(gw, String(unknown.headers['x-switchyard-request-id']));
  t.match(record, { status: 502, error_code: 'upstream_unreachable', group_id: String(group.id), channel: 'ch03', credential_id: String, attempts: [{ status: 400, error_code: 'upstream_unreachable' }] });
  coding = 'gzip';
  const gzipped = await upgradeAnswer(wsUrl);
  t.equal(gzipped.status, 400);
  t.equal(gzipped.headers['content-encoding'], undefined);
  t.equal(gzipped.body.toString(), echoBody(`Bearer ${MASKED}`), 'decoded, the secret masked');
});

t.test('a WebSocket handshake answered with a zstd 401 fails over: the next credential\'s answer reaches the client', async (t) => {
  const upstream = await refusingWsUpstream(t, '401 Unauthorized', (authorization) => (authorization === `Bearer ${SECRET}` ? 'zstd' : 'gzip'));
  const { gw, wsUrl } = await realtimeRoute(t, upstream, { upstreamKeys: [SECRET, SECOND] });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 401, 'the second credential\'s 401, passed on');
  t.equal(answer.body.toString(), echoBody(`Bearer ${SECOND_MASKED}`), 'decoded, its secret masked');
  const record = await waitForLog(gw, String(answer.headers['x-switchyard-request-id']));
  t.equal(record.attempt_count, 2);
  t.match(record, { status: 401, attempts: [{ status: 401, error_code: 'upstream_unreachable' }, { status: 401, error_code: 'upstream_401' }] });
  t.not(record.attempts[0]?.credential_id, record.attempts[1]?.credential_id, 'two credentials');
  t.equal(record.credential_id, record.attempts[1]?.credential_id, 'the record names the credential whose answer was passed on');
});

t.test('a gzip answer below 400 goes as sent, still compressed (bodies below 400 are not scanned)', async (t) => {
  const compressed = gzipSync(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [] }));
  const { gw, keyValue } = await route(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': compressed.length });
    res.end(compressed);
  });
  const answer = await post(gw.url, keyValue);
  t.equal(answer.status, 200);
  t.equal(answer.headers['content-encoding'], 'gzip');
  t.ok(answer.body.equals(compressed), 'the upstream\'s bytes');
});
