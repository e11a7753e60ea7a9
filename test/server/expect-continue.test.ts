import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute, startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// `Expect: 100-continue` (RFC 9110 §10.1.1): a client that honours it sends the body only after
// the 100. The data plane sends it only once it reads the body, so a request refused before
// (a bad key, an unknown path, a body declared too large) is answered with none of its body
// sent, on a connection that then closes; the management plane sends it at once.

const AUTH_KEY = 'expect-continue-auth-key-0123456789abcdef';
const CHAT = JSON.stringify({ model: 'm-a', messages: [{ role: 'user', content: 'hi' }] });

async function setup(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'v-a', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }));
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-expect-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions'] });
  return { server, upstream, keyValue };
}

function head(pathname: string, key: string, length: number): string {
  return `POST ${pathname} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
}

t.test('a bad key with Expect is answered 401 with no 100 before it, and the connection closes without the body', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(head('/v1/chat/completions', 'not-a-key', CHAT.length));
  const answer = await c.next();
  t.equal(answer.status, 401, 'the final answer first: no 100 Continue');
  t.match(JSON.parse(answer.body), { error: { code: 'access_key_invalid' } });
  t.equal(answer.headers['connection'], 'close', 'the body never comes, so the connection is not kept');
  await withTimeout(c.closed, 10_000, 'the connection to close');
  t.equal(c.unread(), 0, 'nothing after the answer');
});

for (const [name, pathname, length, status] of [
  ['an unknown path', '/v1/nothing-here', CHAT.length, 404],
  ['a wrong method', '/v1/models', CHAT.length, 405],
  ['a body declared over maxBodyBytes', '/v1/chat/completions', 65 * 1024 * 1024, 413],
] as const) {
  t.test(`${name} with Expect is answered ${status} with no 100 before it`, async (t) => {
    const s = await setup(t);
    const c = rawConnection(t, s.server.port);
    c.write(head(pathname, s.keyValue, length));
    const answer = await c.next();
    t.equal(answer.status, status, 'the final answer first: no 100 Continue');
    t.equal(answer.headers['connection'], 'close');
    await withTimeout(c.closed, 10_000, 'the connection to close');
  });
}

t.test('a client that sends its body without waiting for the 100 still reads the refusal, not a reset', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  let writeError: Error | undefined;
  c.socket.on('error', (e) => (writeError = e));
  // Not read until the body is written, as a client that gave up waiting for the 100 (curl
  // does after a second): a connection closed on unread bytes resets it, and the answer is lost.
  c.socket.pause();
  const size = 32 * 1024 * 1024;
  c.write(head('/v1/chat/completions', 'not-a-key', size));
  const piece = Buffer.alloc(1024 * 1024, 0x20);
  for (let sent = 0; sent < size && !c.socket.destroyed; sent += piece.length) {
    if (!c.write(piece)) await new Promise<void>((resolve) => {
      const done = () => { c.socket.off('drain', done).off('close', done); resolve(); };
      c.socket.once('drain', done).once('close', done);
    });
  }
  t.equal(writeError, undefined, 'no reset while writing');
  c.socket.resume();
  const answer = await c.next();
  t.equal(answer.status, 401);
  t.equal(answer.headers['connection'], 'close');
});

t.test('a request sent after a refusal that said connection: close, on the lingering connection, is not served', async (t) => {
  const s = await setup(t);
  // Half-open: the client writes on after the gateway's end of the answer, as one that ignores it.
  const socket = connect({ port: s.server.port, host: '127.0.0.1', allowHalfOpen: true });
  t.teardown(() => void socket.destroy());
  socket.on('error', () => {});
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(head('/v1/chat/completions', 'not-a-key', CHAT.length));
  await withTimeout(ended, 10_000, 'the answer and the end of the gateway side');
  t.match(received, /^HTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i);
  // The body after all, then a request the gateway must not take: its answer could not be sent.
  socket.write(`${CHAT}POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${s.keyValue}\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`);
  // A closed connection shows only when written to (it resets); at the latest, the lingering deadline closes it.
  const probe = setInterval(() => socket.destroyed || socket.write(' '), 200);
  t.teardown(() => clearInterval(probe));
  await withTimeout(closed, 10_000, 'the connection to close');
  t.equal(s.upstream.requests.length, 0, 'nothing was forwarded');
  t.equal(received.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'one answer');
});

t.test('a good request with Expect gets the 100, then its answer once the body is sent; the upstream has the body', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(head('/v1/chat/completions', s.keyValue, CHAT.length));
  const interim = await c.next();
  t.equal(interim.status, 100, '100 Continue before any body was sent');
  t.equal(c.unread(), 0, 'and no final answer yet');
  c.write(CHAT);
  const answer = await c.next();
  t.equal(answer.status, 200);
  t.equal(JSON.parse(answer.body).id, 'chatcmpl-1');
  t.same(JSON.parse(s.upstream.requests[0]!.body.toString()), { model: 'v-a', messages: [{ role: 'user', content: 'hi' }] }, 'the whole body went on');
  t.notOk(s.upstream.requests[0]!.headers['expect'], 'without the Expect');
  t.equal(answer.headers['connection'], 'keep-alive', 'the connection is kept');
  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${s.keyValue}\r\n\r\n`);
  t.equal((await c.next()).status, 200, 'and serves the next request');
});

t.test('a management request with Expect gets the 100 at once', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  const body = JSON.stringify({ name: 'via-expect', protocols: ['x-completions'] });
  c.write(`POST /api/access-keys HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${AUTH_KEY}\r\nIdempotency-Key: ${crypto.randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`);
  t.equal((await c.next()).status, 100, '100 Continue');
  c.write(body);
  const created = await c.next();
  t.equal(created.status, 201);
  t.equal(JSON.parse(created.body).data.name, 'via-expect');
});

t.test("node's own client, which waits for the 100 before it sends the body, completes a chat request", async (t) => {
  const s = await setup(t);
  const answer = await withTimeout(
    new Promise<{ status: number; body: string; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = request(`${s.server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${s.keyValue}`, 'content-type': 'application/json', 'content-length': CHAT.length, expect: '100-continue' } });
      req.on('continue', () => {
        continued = true;
        req.end(CHAT);
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, continued }));
      });
      req.on('error', reject);
    }),
    10_000,
    'the answer',
  );
  t.ok(answer.continued, 'the 100 came');
  t.equal(answer.status, 200);
  t.equal(JSON.parse(answer.body).id, 'chatcmpl-1');
});
