import t from 'tap';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { createServer, type AddressInfo } from 'node:net';
import { UpstreamClient, UpstreamReply, classifyUpstreamError, type UpstreamBodySink } from '../../src/upstream/index.ts';
import { loopbackCert, readAll, startLoopbackServer } from './helpers/loopback-server.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { closedPortUrl } from './helpers/dataplane-scenarios.ts';

t.test('forwards method, path, headers and body; any status resolves', async (t) => {
  const server = await startLoopbackServer(async (req, res) => {
    const body = await readAll(req);
    res.writeHead(418, { 'content-type': 'application/json', 'x-request-id': 'up-1' });
    res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers['authorization'], body: body.toString() }));
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  const response = await client.request({
    url: `${server.url}/v1/chat/completions?x=1`,
    method: 'POST',
    headers: { authorization: 'Bearer upstream-secret', 'content-type': 'application/json' },
    body: '{"model":"m"}',
  });
  t.equal(response.status, 418);
  t.equal(response.headers['x-request-id'], 'up-1');
  t.same(JSON.parse((await readAll(response.body)).toString()), {
    method: 'POST',
    url: '/v1/chat/completions?x=1',
    auth: 'Bearer upstream-secret',
    body: '{"model":"m"}',
  });
});

t.test('streams a large request body from a Readable', async (t) => {
  const server = await startLoopbackServer(async (req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of req) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    res.end(JSON.stringify({ bytes, sha256: hash.digest('hex'), te: req.headers['transfer-encoding'] ?? null }));
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  const chunkSize = 64 * 1024;
  const count = 160; // 10 MiB, produced lazily
  const expected = createHash('sha256');
  let produced = 0;
  const source = new Readable({
    read() {
      if (produced === count) return void this.push(null);
      const chunk = Buffer.alloc(chunkSize, produced % 251);
      expected.update(chunk);
      produced++;
      this.push(chunk);
    },
  });
  const response = await client.request({ url: `${server.url}/v1/images/edits`, method: 'POST', headers: {}, body: source });
  const echoed = JSON.parse((await readAll(response.body)).toString());
  t.equal(echoed.bytes, chunkSize * count);
  t.equal(echoed.sha256, expected.digest('hex'));
  t.equal(echoed.te, 'chunked', 'sent as it was read, without a length');
});

t.test('response body streams before the upstream finishes', async (t) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = await startLoopbackServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: first\n\n');
    await released;
    res.end('data: second\n\n');
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    release();
    await client.close();
    await server.close();
  });
  const response = await client.request({ url: `${server.url}/s`, method: 'POST', headers: {}, body: '{}' });
  const [first] = (await once(response.body, 'data')) as [Buffer];
  t.equal(first.toString(), 'data: first\n\n', 'first event arrived while the upstream is still open');
  release();
  t.equal((await readAll(response.body)).toString(), 'data: second\n\n');
});

t.test('keep-alive: sequential requests reuse connections', async (t) => {
  const server = await startLoopbackServer((_req, res) => res.end('ok'));
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  for (let i = 0; i < 20; i++) {
    const response = await client.request({ url: `${server.url}/r${i}`, method: 'GET', headers: {} });
    await readAll(response.body);
  }
  // undici may open a second socket while the first is still finishing its response.
  t.ok(server.connections() <= 2, `20 requests over ${server.connections()} connection(s)`);
});

t.test('abort before headers rejects as aborted and closes the upstream request', async (t) => {
  let upstreamClosed!: () => void;
  const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
  const controller = new AbortController();
  // Aborted once the upstream holds the request: an abort on a timer could come before the
  // request reached it, and then no handler would ever see the close.
  const server = await startLoopbackServer((req) => {
    req.socket.once('close', upstreamClosed);
    controller.abort();
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const pending = client.request({ url: `${server.url}/hang`, method: 'POST', headers: {}, body: '{}', signal: controller.signal });
  const error = await pending.then(() => undefined, (e: unknown) => e);
  t.equal(classifyUpstreamError(error).kind, 'aborted');
  await closed;
  t.pass('upstream saw the connection close');
});

t.test('abort mid-body ends the body with an error and closes the upstream side', async (t) => {
  let upstreamClosed!: () => void;
  const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
  const server = await startLoopbackServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: one\n\n');
    req.socket.once('close', upstreamClosed);
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const controller = new AbortController();
  const response = await client.request({ url: `${server.url}/s`, method: 'POST', headers: {}, body: '{}', signal: controller.signal });
  await once(response.body, 'data');
  controller.abort();
  const error = await readAll(response.body).then(() => undefined, (e: unknown) => e);
  t.equal(classifyUpstreamError(error).kind, 'aborted');
  await closed;
  t.pass('upstream saw the connection close');
});

t.test('headers timeout and body idle timeout', async (t) => {
  const server = await startLoopbackServer((req, res) => {
    if (req.url === '/stall-body') {
      res.writeHead(200);
      res.write('partial');
    }
  });
  const client = new UpstreamClient({ headersTimeoutMs: 50, bodyIdleTimeoutMs: 50 });
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const headersError = await client.request({ url: `${server.url}/stall-headers`, method: 'GET', headers: {} }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.same(classifyUpstreamError(headersError), { kind: 'headers_timeout', notDelivered: false, overdue: true, code: 'upstream_timeout' });
  const response = await client.request({ url: `${server.url}/stall-body`, method: 'GET', headers: {} });
  const bodyError = await readAll(response.body).then(() => undefined, (e: unknown) => e);
  t.same(classifyUpstreamError(bodyError), { kind: 'body_timeout', notDelivered: false, overdue: true, code: 'upstream_idle_timeout' });
});

t.test('a refused connection is a connect failure that never reached the upstream', async (t) => {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const client = new UpstreamClient();
  t.teardown(() => client.destroy());
  const error = await client.request({ url: `http://127.0.0.1:${port}/`, method: 'GET', headers: {} }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.same(classifyUpstreamError(error), { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' });
});

t.test('a connection dropped mid-response is connection_lost', async (t) => {
  const server = await startLoopbackServer((req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('short');
    setImmediate(() => req.socket.destroy());
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const response = await client.request({ url: `${server.url}/`, method: 'GET', headers: {} });
  const error = await readAll(response.body).then(() => undefined, (e: unknown) => e);
  t.equal(classifyUpstreamError(error).kind, 'connection_lost');
});

t.test('https upstream with a private CA; untrusted certificate is a connect failure, the certificate refused', async (t) => {
  const server = await startLoopbackServer((_req, res) => res.end('secure'), { tls: true });
  const trusting = new UpstreamClient({ tls: { ca: loopbackCert.cert } });
  const strict = new UpstreamClient();
  t.teardown(async () => {
    await trusting.close();
    await strict.destroy();
    await server.close();
  });
  const ok = await trusting.request({ url: `${server.url}/`, method: 'GET', headers: {} });
  t.equal((await readAll(ok.body)).toString(), 'secure');
  const error = await strict.request({ url: `${server.url}/`, method: 'GET', headers: {} }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.match(classifyUpstreamError(error), { kind: 'connect_failed', certificateRefused: true, code: 'upstream_tls_certificate_invalid' });
});

t.test('through a proxy: a proxy down or refusing the gateway is proxy_unreachable, the upstream out of its reach is not', async (t) => {
  const upstream = await startLoopbackServer((_req, res) => res.end('ok'));
  const secureUpstream = await startLoopbackServer((_req, res) => res.end('ok'), { tls: true });
  const http = await startHttpConnectProxy();
  const httpAuth = await startHttpConnectProxy({ username: 'puser', password: 'right' });
  const socks = await startSocks5Server();
  const socksAuth = await startSocks5Server({ username: 'puser', password: 'right' });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await Promise.all([upstream.close(), secureUpstream.close(), http.close(), httpAuth.close(), socks.close(), socksAuth.close()]);
  });
  const closed = await closedPortUrl();
  const failing = (url: string, proxy: string) =>
    client.request({ url: `${url}/`, method: 'GET', headers: {}, proxy }).then(
      () => undefined,
      (e: unknown) => e,
    );
  const proxyUnreachable = { kind: 'proxy_unreachable', notDelivered: true, code: 'proxy_unreachable' };
  const connectFailed = { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' };
  const certificateRefused = { ...connectFailed, certificateRefused: true, code: 'upstream_tls_certificate_invalid' };
  const cases = [
    { what: 'HTTP proxy on a closed port', error: await failing(upstream.url, closed), viaProxy: proxyUnreachable },
    { what: 'SOCKS5 proxy on a closed port', error: await failing(upstream.url, closed.replace(/^http:/, 'socks5:')), viaProxy: proxyUnreachable },
    { what: 'HTTP proxy refusing a wrong password (407)', error: await failing(upstream.url, httpAuth.url.replace(':right@', ':wrong@')), viaProxy: proxyUnreachable },
    { what: 'SOCKS5 proxy refusing a wrong password', error: await failing(upstream.url, socksAuth.url.replace(':right@', ':wrong@')), viaProxy: proxyUnreachable },
    { what: 'HTTP proxy answering 502 for an upstream it cannot reach', error: await failing(closed, http.url), viaProxy: connectFailed },
    { what: 'SOCKS5 proxy replying ConnectionRefused for the upstream', error: await failing(closed, socks.url), viaProxy: connectFailed },
    { what: 'untrusted upstream certificate inside the tunnel', error: await failing(secureUpstream.url, http.url), viaProxy: certificateRefused, direct: certificateRefused },
  ];
  for (const c of cases) {
    t.same(classifyUpstreamError(c.error, { viaProxy: true }), c.viaProxy, `${c.what}, via a proxy`);
    // Without a proxy nothing changes: every one of them is a connection never made.
    t.same(classifyUpstreamError(c.error), c.direct ?? connectFailed, `${c.what}, no proxy`);
    t.same(classifyUpstreamError(c.error, { viaProxy: false }), c.direct ?? connectFailed, `${c.what}, viaProxy false`);
  }
  t.equal(upstream.connections(), 0, 'the upstream saw none of them');
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  t.same(classifyUpstreamError(refused, { viaProxy: true }), proxyUnreachable);
  t.same(classifyUpstreamError(refused), connectFailed);
});

t.test('classifies odd values without throwing', async (t) => {
  t.equal(classifyUpstreamError(undefined).kind, 'unknown');
  t.equal(classifyUpstreamError('boom').kind, 'unknown');
  t.equal(classifyUpstreamError(Object.assign(new Error('x'), { cause: { code: 'ECONNREFUSED' } })).kind, 'connect_failed');
});

t.test('exchange: the body reaches a sink attached after the reply, however much arrived first', async (t) => {
  const payload = Buffer.alloc(3 * 1024 * 1024, 7);
  payload.write('start');
  payload.write('end', payload.length - 3);
  const server = await startLoopbackServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(payload.length) });
    res.end(payload);
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  const reply = await client.exchange({ url: `${server.url}/big`, method: 'GET', headers: {} }).reply;
  t.equal(reply.status, 200);
  t.equal(reply.headers['content-type'], 'application/octet-stream');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const { head: body, rest } = await reply.readHead(Infinity);
  t.ok(body.equals(payload), 'every byte, in order');
  t.equal(rest, undefined, 'nothing left');
  await t.rejects(reply.readHead(Infinity), /consumed once/, 'a body is consumed once');
});

t.test('exchange: the rest after readHead keeps a pause its consumer makes while the head is replayed', async (t) => {
  const payload = Buffer.alloc(16 * 1024 * 1024, 7);
  const server = await startLoopbackServer((_req, res) => {
    res.writeHead(500);
    for (let at = 0; at < payload.length; at += 64 * 1024) res.write(payload.subarray(at, at + 64 * 1024));
    res.end();
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const reply = await client.exchange({ url: `${server.url}/big-error`, method: 'GET', headers: {} }).reply;
  const { head, rest } = await reply.readHead(1024 * 1024);
  const next = rest!({}, head);
  let received = 0;
  const done = new Promise<void>((resolve, reject) => {
    // As the relay does when the client's buffer is full: one pause, lifted later.
    next.consume({
      onData: (chunk) => {
        if (received === 0) next.pause();
        received += chunk.length;
      },
      onEnd: resolve,
      onError: reject,
    });
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.ok(received < 2 * 1024 * 1024, `still paused after the head (${received} bytes)`);
  next.resume();
  await done;
  t.equal(received, payload.length, 'then everything');
});

t.test('exchange: a paused reply resumes and still delivers everything', async (t) => {
  const server = await startLoopbackServer((_req, res) => {
    res.writeHead(200);
    let n = 0;
    const next = () => {
      while (n < 64) if (!res.write(Buffer.alloc(64 * 1024, n++))) return void res.once('drain', next);
      res.end();
    };
    next();
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  const reply = await client.exchange({ url: `${server.url}/`, method: 'GET', headers: {} }).reply;
  const received: Buffer[] = [];
  let pauses = 0;
  await new Promise<void>((resolve, reject) => {
    reply.consume({
      onData(chunk) {
        received.push(chunk);
        if (received.length % 4 === 0) {
          pauses++;
          reply.pause();
          setTimeout(() => reply.resume(), 2);
        }
      },
      onEnd: resolve,
      onError: reject,
    });
  });
  const body = Buffer.concat(received);
  t.equal(body.length, 64 * 64 * 1024);
  t.equal(body[body.length - 1], 63);
  t.ok(pauses > 0, 'the consumer paused along the way');
});

t.test('exchange: abort before the answer rejects the reply as aborted; readHead stops past its limit and rest() goes on', async (t) => {
  const server = await startLoopbackServer((req, res) => {
    if (req.url === '/text') res.end('0123456789');
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const pending = client.exchange({ url: `${server.url}/hang`, method: 'GET', headers: {} });
  pending.abort();
  const error = await pending.reply.then(() => undefined, (e: unknown) => e);
  t.equal(classifyUpstreamError(error).kind, 'aborted');
  const reply = await client.exchange({ url: `${server.url}/text`, method: 'GET', headers: {} }).reply;
  const { head, rest } = await reply.readHead(4);
  t.equal(head.toString(), '0123');
  const next = rest!({ 'x-next': 'yes' }, Buffer.from('ab'));
  t.same([next.status, next.headers], [200, { 'x-next': 'yes' }]);
  t.equal((await next.readHead(Infinity)).head.toString(), 'ab456789', 'the rewritten head, then the rest');
  const whole = await client.exchange({ url: `${server.url}/text`, method: 'GET', headers: {} }).reply;
  t.same(await whole.readHead(10), { head: Buffer.from('0123456789'), rest: undefined }, 'a body that ends at the limit is whole');
});

/** A transport that records what a reply asks of it; an abort ends the reply with the reason, as undici's does. */
function recordingTransport() {
  const calls: string[] = [];
  let reply: UpstreamReply | undefined;
  const transport = {
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
    abort: (reason: Error) => {
      calls.push('abort');
      reply?.pushError(reason);
    },
  };
  return { calls, transport, attach: (r: UpstreamReply) => (reply = r) };
}

/** Consumes a reply: the chunks it gets and how it ends. */
function collect(reply: UpstreamReply): { chunks: string[]; ended: Promise<'end' | Error> } {
  const chunks: string[] = [];
  const ended = new Promise<'end' | Error>((resolve) => {
    const sink: UpstreamBodySink = { onData: (chunk) => void chunks.push(chunk.toString()), onEnd: () => resolve('end'), onError: resolve };
    reply.consume(sink);
  });
  return { chunks, ended };
}

t.test('UpstreamReply.mapped: the body through the map and its end output last, on the same transport', async (t) => {
  const { calls, transport, attach } = recordingTransport();
  const reply = attach(new UpstreamReply(400, { 'x-up': 'a' }, transport));
  reply.pushData(Buffer.from('ab'));
  const mapped = reply.mapped({ 'x-mapped': 'b' }, { data: (chunk) => Buffer.from(chunk.toString().toUpperCase()), end: () => Buffer.from('!') });
  t.same([mapped.status, mapped.headers], [400, { 'x-mapped': 'b' }], 'the status, with the given headers');
  const { chunks, ended } = collect(mapped);
  reply.pushData(Buffer.from('cd'));
  reply.pushEnd();
  t.equal(await ended, 'end');
  t.equal(chunks.join(''), 'ABCD!', 'every chunk through the map, then what its end gave');
  mapped.pause();
  mapped.resume();
  t.same(calls, ['pause', 'resume'], 'pause and resume act on the transport');

  const second = recordingTransport();
  const aborted = second.attach(new UpstreamReply(503, {}, second.transport));
  const next = aborted.mapped({}, { data: (chunk) => chunk, end: () => undefined });
  const outcome = collect(next);
  next.abort();
  t.same(second.calls, ['abort'], 'abort acts on the transport');
  t.match(await outcome.ended, { name: 'AbortError' }, 'and ends the mapped body with the error');
});

t.test('UpstreamReply.mapped: a pause made while nobody consumed the body is lifted once the mapped reply is consumed', async (t) => {
  const { calls, transport, attach } = recordingTransport();
  const reply = attach(new UpstreamReply(400, {}, transport));
  reply.pushData(Buffer.alloc(80 * 1024, 'x'));
  t.same(calls, ['pause'], 'paused past 64 KiB kept');
  const mapped = reply.mapped({}, { data: (chunk) => chunk.subarray(0, 1), end: () => undefined });
  t.same(calls, ['pause'], 'still paused: nothing consumes the mapped reply yet');
  const { chunks } = collect(mapped);
  t.same(calls, ['pause', 'resume'], 'resumed once it is consumed');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(chunks, ['x'], 'the kept chunks went through the map');
});

t.test('exchange: abort mid-body ends the sink with an error', async (t) => {
  const server = await startLoopbackServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: one\n\n');
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await server.close();
  });
  const exchange = client.exchange({ url: `${server.url}/s`, method: 'GET', headers: {} });
  const reply = await exchange.reply;
  const outcome = await new Promise<{ data: string; error: unknown }>((resolve) => {
    let data = '';
    reply.consume({
      onData(chunk) {
        data += chunk.toString();
        exchange.abort();
      },
      onEnd: () => resolve({ data, error: undefined }),
      onError: (error) => resolve({ data, error }),
    });
  });
  t.equal(outcome.data, 'data: one\n\n');
  t.equal(classifyUpstreamError(outcome.error).kind, 'aborted');
});

t.test('exchange: the chunks of one read reach the sink as one chunk, before the end, whether it came before or after the sink', async (t) => {
  const events = Array.from({ length: 7 }, (_, i) => `data: {"n":${i}}\n\n`);
  const server = await startLoopbackServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    // One write per event, as streaming upstreams do: one HTTP chunk each, in one turn.
    setTimeout(() => {
      for (const event of events) res.write(event);
      res.end();
    }, req.url === '/later' ? 100 : 0);
  });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  for (const path of ['/sooner', '/later']) {
    const reply = await client.exchange({ url: `${server.url}${path}`, method: 'GET', headers: {} }).reply;
    // /sooner: the body arrived before the sink; /later: after it.
    if (path === '/sooner') await new Promise((resolve) => setTimeout(resolve, 100));
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => reply.consume({ onData: (chunk) => received.push(chunk.toString()), onEnd: resolve, onError: reject }));
    t.equal(received.join(''), events.join(''), `${path}: every byte, in order`);
    t.ok(received.length < events.length, `${path}: fewer chunks than events (${received.length} for ${events.length})`);
  }
});
