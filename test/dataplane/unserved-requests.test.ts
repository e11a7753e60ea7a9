import { connect } from 'node:net';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { eventually, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// Requests the gateway does not answer itself: a body node's parser refuses (node answers its
// bare 400). A request pipelined behind a refusal is answered after it (see the last test).

const ok = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"x","choices":[]}');
};

/** Generous bound on waiting for a connection to end: the test fails rather than hangs. */
const CLOSE_BOUND_MS = 10_000;
const BODY = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });

async function chatGateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  return { upstream, gw, keyValue };
}

/** Writes `bytes` on a new connection; `closed` resolves with all it received once the connection ends. */
function rawExchange(t: Test, gw: Gateway, bytes: string, endAfterWrite = false) {
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  t.teardown(() => void socket.destroy());
  socket.write(bytes, () => {
    if (endAfterWrite) socket.end();
  });
  return withTimeout(closed, CLOSE_BOUND_MS, 'the connection to end');
}

async function onlyRecord(gw: Gateway) {
  return eventually(async () => {
    await gw.logs.flush();
    const { items } = await gw.logs.list({}, { limit: 5 });
    return items.length > 0 ? items : undefined;
  }, 'a log record');
}

const chunkedHead = (keyValue: string) => `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`;

t.test('a chunked body whose chunk size is not hex is recorded as a 400 invalid_request_body, not as a client that left', async (t) => {
  const { upstream, gw, keyValue } = await chatGateway(t);
  const received = await rawExchange(t, gw, `${chunkedHead(keyValue)}zz\r\n${BODY}\r\n0\r\n\r\n`);
  t.match(received, /^HTTP\/1\.1 400 /, 'the client is answered 400');
  const items = await onlyRecord(gw);
  t.equal(items.length, 1);
  t.match(items[0], { status: 400, error_code: 'invalid_request_body', client_aborted: false, operation: 'chat-completions' });
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
});

t.test('a chunk longer than its declared size is recorded as a 400 invalid_request_body', async (t) => {
  const { gw, keyValue } = await chatGateway(t);
  const received = await rawExchange(t, gw, `${chunkedHead(keyValue)}5\r\n${BODY}\r\n0\r\n\r\n`);
  t.match(received, /^HTTP\/1\.1 400 /);
  const [record] = await onlyRecord(gw);
  t.match(record, { status: 400, error_code: 'invalid_request_body', client_aborted: false });
});

t.test('a form whose framing breaks while it already streams upstream is recorded as a 400 invalid_request_body too', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-stt' }], protocols: ['x-suite'] });
  const head = `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: multipart/form-data; boundary=b0\r\ntransfer-encoding: chunked\r\n\r\n`;
  const form = '--b0\r\nContent-Disposition: form-data; name="model"\r\n\r\nstt\r\n--b0\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\n' + 'A'.repeat(1024);
  // The model part first, so the form is forwarded as it comes; then a chunk size that is not hex.
  const received = await rawExchange(t, gw, `${head}${Buffer.byteLength(form).toString(16)}\r\n${form}\r\nzz\r\n`);
  t.match(received, /^HTTP\/1\.1 400 /, "node's own 400");
  const [record] = await onlyRecord(gw);
  t.match(record, { status: 400, error_code: 'invalid_request_body', client_aborted: false, operation: 'audio-transcriptions', attempts: [{ error_code: 'invalid_request_body' }] });
});

t.test('a client that ends its connection mid-chunk is still recorded as client_closed', async (t) => {
  const { gw, keyValue } = await chatGateway(t);
  // A whole first chunk, then the client ends the connection before the last chunk.
  await rawExchange(t, gw, `${chunkedHead(keyValue)}${BODY.length.toString(16)}\r\n${BODY}\r\n`, true);
  const [record] = await onlyRecord(gw);
  t.match(record, { status: 499, error_code: 'client_closed', client_aborted: true });
});

t.test('a request pipelined behind a 401 given before its body was read is answered after it, on the same connection', async (t) => {
  const { upstream, gw, keyValue } = await chatGateway(t);
  const refused = `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`;
  // It asks for the connection to end after it, so that the exchange ends.
  const good = `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\nconnection: close\r\n\r\n${BODY}`;
  const received = await rawExchange(t, gw, refused + good);
  // The refused body is read and discarded, so node's parser reaches the next request.
  t.same(received.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 401 ', 'HTTP/1.1 200 '], 'the 401, then the next request answered in order');
  t.notMatch(received.slice(0, received.indexOf('\r\n\r\n')), /\r\nconnection: close\r\n/i, 'the refusal kept the connection');
  const ids = [...received.matchAll(/\r\nx-switchyard-request-id: ([^\r]+)\r\n/gi)].map((m) => m[1]);
  t.equal(ids.length, 2);
  t.match(await waitForLog(gw, ids[0]), { status: 401, error_code: 'access_key_invalid' });
  t.match(await waitForLog(gw, ids[1]), { status: 200, error_code: null });
  t.equal(upstream.requests.length, 1, 'only the later request reached the upstream');
  t.same(JSON.parse(upstream.requests[0]!.body.toString()), { ...JSON.parse(BODY), model: 'vendor-chat' }, 'with its own body');
});
