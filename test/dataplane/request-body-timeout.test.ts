import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { createKey, deferred, eventually, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';

// A request body that goes silent for stream_idle_timeout_seconds (set to 1 here through the
// settings, as an operator would) is answered 408 request_timeout; one that keeps coming is not
// cut however long it takes (the server has no whole-request deadline).

/** Generous bound on each wait: far above the 1 s setting, far below node's old 300 s request deadline. */
const BOUND_MS = 30_000;
const BOUNDARY = 'switchyard-test-boundary';

/** What the substitute upstream saw: requests whose body started, ended whole, or was cut. */
interface Upstream {
  url: string;
  started: number;
  completed: Buffer[];
  aborted: Promise<void>;
  firstStarted: Promise<void>;
}

async function startUpstream(t: Test): Promise<Upstream> {
  const aborted = deferred();
  const firstStarted = deferred();
  const seen: Upstream = { url: '', started: 0, completed: [], aborted: aborted.promise, firstStarted: firstStarted.promise };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.started += 1;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      firstStarted.resolve();
    });
    req.on('end', () => {
      seen.completed.push(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"created":1,"data":[]}');
    });
    req.on('close', () => {
      if (!req.complete) aborted.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  seen.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return seen;
}

/** The real server with the data plane mounted as `serve` does, and the http.Server it runs on. */
async function gateway(t: Test, upstream: Upstream): Promise<{ gw: Gateway; keyValue: string; httpServer: () => Server | undefined }> {
  let httpServer: Server | undefined;
  const mount = dataPlaneMount();
  const gw = await startGateway(t, {
    clock: Date.now,
    mountDataPlane: async (app, ctx) => {
      const mounted = (await mount(app, ctx)) ?? {};
      const request = mounted.request;
      return {
        ...mounted,
        request: (req: IncomingMessage, res: ServerResponse) => {
          // node keeps the accepting server on each of its sockets.
          httpServer ??= (req.socket as Socket & { server?: Server }).server;
          request?.(req, res);
        },
      };
    },
  });
  await seedGroup(gw.server.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-up'] });
  await seedGroup(gw.server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.server.store, { protocols: ['x-images', 'x-completions'] });
  const saved = await gw.api('PUT', '/api/settings', { body: { stream_idle_timeout_seconds: 1 } });
  t.equal(saved.status, 200, 'settings saved');
  return { gw, keyValue, httpServer: () => httpServer };
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A request whose body the test writes by hand; `answer` settles when the gateway answers, finished or not. */
function openRequest(gw: Gateway, path: string, headers: Record<string, string>) {
  const req = httpRequest(`${gw.url}${path}`, { method: 'POST', headers });
  req.on('error', () => {});
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
  });
  return { req, answer: withTimeout(answer, BOUND_MS, 'the gateway\'s answer') };
}

function formHead(fileBytes: number): { head: Buffer; tail: Buffer; length: number } {
  const head = Buffer.from(
    `--${BOUNDARY}\r\ncontent-disposition: form-data; name="model"\r\n\r\nimg\r\n` +
      `--${BOUNDARY}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\na red square\r\n` +
      `--${BOUNDARY}\r\ncontent-disposition: form-data; name="image"; filename="in.png"\r\ncontent-type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return { head, tail, length: head.length + fileBytes + tail.length };
}

/** The one log record of the answered request. */
function recordOf(gw: Gateway, got: Answer) {
  const requestId = got.headers['x-switchyard-request-id'] as string;
  return eventually(async () => {
    await gw.server.logs.flush();
    return gw.server.logs.get(requestId);
  }, `log record ${requestId}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('the server sets no whole-request deadline', async (t) => {
  const upstream = await startUpstream(t);
  const { gw, keyValue, httpServer } = await gateway(t, upstream);
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'chat', messages: [] }) });
  await res.arrayBuffer();
  const server = httpServer();
  t.ok(server, 'the data plane saw the server');
  t.equal(server?.requestTimeout, 0, 'requestTimeout is off');
  t.equal(server?.headersTimeout, 60_000, 'headersTimeout stays node\'s 60 s');
});

for (const framing of ['content-length', 'chunked'] as const) {
  t.test(`a JSON body (${framing}) that stops half way is answered 408 request_timeout`, async (t) => {
    const upstream = await startUpstream(t);
    const { gw, keyValue } = await gateway(t, upstream);
    const body = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hello there' }] });
    const headers: Record<string, string> = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
    if (framing === 'content-length') headers['content-length'] = String(Buffer.byteLength(body));
    const { req, answer } = openRequest(gw, '/v1/chat/completions', headers);
    t.teardown(() => req.destroy());
    req.write(body.slice(0, body.length / 2));
    const got = await answer;
    t.equal(got.status, 408);
    t.match(JSON.parse(got.body), { error: { code: 'request_timeout', type: String, message: String } }, 'in the completions error shape');
    t.equal(got.headers['connection'], 'close', 'the rest of the body is not waited for');
    const record = await recordOf(gw, got);
    t.match(record, { status: 408, error_code: 'request_timeout', client_aborted: false, attempt_count: 0 });
    t.equal(upstream.started, 0, 'nothing reached the upstream');
  });
}

t.test('a form upload that stops half way while streaming to the upstream: the upstream request is called off, 408', async (t) => {
  const upstream = await startUpstream(t);
  const { gw, keyValue } = await gateway(t, upstream);
  const form = formHead(200_000);
  const { req, answer } = openRequest(gw, '/v1/images/edits', { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(form.length) });
  t.teardown(() => req.destroy());
  req.write(form.head);
  req.write(Buffer.alloc(50_000, 7));
  await withTimeout(upstream.firstStarted, BOUND_MS, 'the body streaming to the upstream');
  await withTimeout(upstream.aborted, BOUND_MS, 'the upstream request called off');
  const got = await answer;
  t.equal(got.status, 408);
  t.match(JSON.parse(got.body), { error: { code: 'request_timeout' } });
  t.same(upstream.completed, [], 'the upstream never got a complete request');
  const record = await recordOf(gw, got);
  t.match(record, { status: 408, error_code: 'request_timeout', client_aborted: false, attempt_count: 1, attempts: [{ error_code: 'request_timeout' }] });
});

t.test('a form upload that keeps coming, slowly, for longer than the idle timeout is not cut', async (t) => {
  const upstream = await startUpstream(t);
  const { gw, keyValue } = await gateway(t, upstream);
  const piece = Buffer.alloc(1024, 7);
  const pieces = 10;
  const form = formHead(piece.length * pieces);
  const { req, answer } = openRequest(gw, '/v1/images/edits', { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(form.length) });
  t.teardown(() => req.destroy());
  req.write(form.head);
  // 10 pieces 300 ms apart: 3 s in all, each gap well under the 1 s idle timeout.
  for (let i = 0; i < pieces; i++) {
    await sleep(300);
    req.write(piece);
  }
  req.end(form.tail);
  const got = await answer;
  t.equal(got.status, 200);
  t.equal(upstream.completed.length, 1, 'the upstream got the whole form');
  t.equal(upstream.completed[0]!.length, form.length - 'img'.length + 'vendor-img'.length, 'every byte of it, with the mapped model');
  const record = await recordOf(gw, got);
  t.match(record, { status: 200, error_code: null, client_aborted: false });
});

// With no whole-request deadline, a body nobody will read must not hold its connection open;
// one still coming is read and discarded (no `connection: close`, which would reset a client still writing).
t.test('a request refused before its body is read is answered, and the gateway ends the connection once the rest stops coming, on both planes', async (t) => {
  const upstream = await startUpstream(t);
  const { gw } = await gateway(t, upstream);
  const { port } = new URL(gw.url);
  for (const [path, auth] of [
    ['/v1/chat/completions', 'Bearer sk-not-a-key'],
    ['/v1/no-such-endpoint', 'Bearer sk-not-a-key'],
    ['/api/groups', 'Bearer not-the-auth-key'],
  ] as const) {
    // A raw socket that never sends the rest: only the gateway can end this connection.
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => {});
    const ended = once(socket, 'end');
    socket.write(`POST ${path} HTTP/1.1\r\nhost: gw\r\nauthorization: ${auth}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":"chat",`);
    await withTimeout(ended, BOUND_MS, `${path}: the gateway to end the connection`);
    t.match(received, /^HTTP\/1\.1 40[14] /, `${path}: refused`);
    t.notMatch(received, /\r\nconnection: close\r\n/i, `${path}: the rest of the body was still read`);
    socket.destroy();
  }
});

t.test('a refusal of a request without a body keeps its connection', async (t) => {
  const upstream = await startUpstream(t);
  const { gw, keyValue } = await gateway(t, upstream);
  const get = (path: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(`${gw.url}${path}`, { headers: { authorization: `Bearer ${keyValue}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' }));
      });
      req.on('error', reject);
      req.end();
    });
  // The key is then cached: the refusal below is made while node is still reading the request's head.
  t.equal((await get('/v1/models')).status, 200);
  const refused = await get('/v1/models/no-such-model');
  t.equal(refused.status, 404);
  t.not(refused.headers['connection'], 'close', 'nothing left to read, nothing to close for');
});
