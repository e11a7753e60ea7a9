import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { ERROR_CODES } from '../../src/http/error-codes.ts';
import { createServer, type DataPlaneMount, type RunningServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute } from '../dataplane/helpers/data-plane-harness.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// What node's HTTP parser refuses before any handler runs was answered by node itself: a bare
// "400 Bad Request" (431, 413, 408) with no body, so no stable code. Each is now answered with
// node's status, `connection: close` and a JSON body with a code, in the management envelope for
// /api, else in the data plane's error shape; no request-log record is kept of a refused head.

const AUTH_KEY = 'parser-failure-auth-key-0123456789abcdef';

interface Started {
  server: RunningServer;
  /** The node server that accepts the connections, once a request has reached the data plane. */
  node(): Server | undefined;
}

async function start(t: Test): Promise<Started> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-parser-failure-'));
  let node: Server | undefined;
  const mount = dataPlaneMount();
  // The data plane as served, noting the node server (to shorten its headers deadline).
  const noting: DataPlaneMount = async (app, deps) => {
    const mounted = (await mount(app, deps)) ?? {};
    const request = mounted.request!;
    return {
      ...mounted,
      request: (req, res) => {
        node = (req.socket as unknown as { server: Server }).server;
        request(req, res);
      },
    };
  };
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: noting, log: () => {} });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { server, node: () => node };
}

/** Writes `bytes` on a new connection; its one answer, and whether the connection then closed. */
async function answerTo(t: Test, server: RunningServer, bytes: string | Buffer) {
  const c = rawConnection(t, server.port);
  c.write(bytes);
  const answer = await c.next();
  await c.closed;
  return { ...answer, json: JSON.parse(answer.body) as Record<string, unknown>, unread: c.unread() };
}

const CHAT = 'POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n';

t.test('refused heads are answered with node status, connection: close and a code in the data plane shape the head chooses', async (t) => {
  const { server } = await start(t);
  const cases: Array<[string, string | Buffer, number, unknown]> = [
    ['Transfer-Encoding with Content-Length', `${CHAT}transfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n`, 400, { error: { code: 'malformed_request', type: 'invalid_request_error', param: null } }],
    [
      'two Content-Length, messages client',
      'POST /v1/messages HTTP/1.1\r\nhost: gw\r\nanthropic-version: 2023-06-01\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello',
      400,
      { type: 'error', error: { type: 'invalid_request_error', code: 'malformed_request', details: { error_code: 'malformed_request' } }, request_id: null },
    ],
    [
      'a non-numeric Content-Length, generate route',
      'POST /v1beta/models/g:generateContent HTTP/1.1\r\nhost: gw\r\ncontent-length: abc\r\n\r\n{}',
      400,
      { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'malformed_request' }] } },
    ],
    ['Transfer-Encoding: chunked, chunked', `${CHAT}transfer-encoding: chunked, chunked\r\n\r\n0\r\n\r\n`, 400, { error: { code: 'malformed_request' } }],
    ['a header over the limit', `GET /v1/models HTTP/1.1\r\nhost: gw\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, { error: { code: 'request_headers_too_large', type: 'invalid_request_error' } }],
    [
      'a header over the limit after a header that quotes a request line',
      `GET /v1/models HTTP/1.1\r\nhost: gw\r\nx-note: see GET /api/health HTTP/1.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      { error: { code: 'request_headers_too_large', type: 'invalid_request_error' } },
    ],
    ['a lowercase method', 'get /v1/models HTTP/1.1\r\nhost: gw\r\n\r\n', 400, { error: { code: 'malformed_request' } }],
    ['raw non-ASCII bytes in the path, a key from the query', Buffer.concat([Buffer.from('GET /v1beta/mod'), Buffer.from([0xc3, 0xa9]), Buffer.from('ls?key=k HTTP/1.1\r\nhost: gw\r\n\r\n')]), 400, { error: { code: 400, details: [{ reason: 'malformed_request' }] } }],
    ['an absolute-form target', 'get http://gw/v1/messages HTTP/1.1\r\nhost: gw\r\nanthropic-version: 2023-06-01\r\n\r\n', 400, { type: 'error', error: { code: 'malformed_request' } }],
  ];
  for (const [name, bytes, status, body] of cases) {
    const answer = await answerTo(t, server, bytes);
    t.equal(answer.status, status, `${name}: node's status`);
    t.equal(answer.headers['connection'], 'close', `${name}: the answer says the connection ends`);
    t.equal(answer.headers['content-type'], 'application/json', `${name}: JSON`);
    t.match(answer.json, body, `${name}: the stable code in the shape the head chooses`);
    t.equal(answer.headers['x-switchyard-request-id'], undefined, `${name}: no request id, as no record is kept`);
    t.equal(answer.unread, 0, `${name}: nothing after the one answer`);
  }
  await server.logs.flush();
  t.same((await server.logs.list({}, { limit: 10 })).items, [], 'no request-log record: no handler ran, no key was checked');
});

t.test('refused heads under /api are answered in the management envelope, in the language asked for', async (t) => {
  const { server } = await start(t);
  const en = await answerTo(t, server, 'POST /api/groups HTTP/1.1\r\nhost: gw\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n');
  t.equal(en.status, 400);
  t.equal(en.headers['connection'], 'close');
  t.equal(en.headers['cache-control'], 'no-store', 'as every management answer');
  t.same(en.json, { code: 'MALFORMED_REQUEST', message: ERROR_CODES.MALFORMED_REQUEST.message.en });
  const zh = await answerTo(t, server, `GET /api/health HTTP/1.1\r\nhost: gw\r\naccept-language: zh-CN\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
  t.equal(zh.status, 431);
  t.same(zh.json, { code: 'REQUEST_HEADERS_TOO_LARGE', message: ERROR_CODES.REQUEST_HEADERS_TOO_LARGE.message['zh-CN'] });
  const method = await answerTo(t, server, 'get /api/health HTTP/1.1\r\nhost: gw\r\n\r\n');
  t.equal(method.status, 400);
  t.equal(method.json['code'], 'MALFORMED_REQUEST', 'a lowercase method');
});

t.test('a chunk size that is no number is answered 400 with the code its record has, on both planes', async (t) => {
  const { server } = await start(t);
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'chat', upstream: 'v-chat' }], protocols: ['x-completions'] });
  const data = await answerTo(t, server, `${CHAT}authorization: Bearer ${keyValue}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
  t.equal(data.status, 400);
  t.equal(data.headers['connection'], 'close');
  t.match(data.json, { error: { code: 'invalid_request_body', type: 'invalid_request_error', message: /framing is broken/ } });
  // Its handler ran: the record is its own, as before.
  await server.logs.flush();
  const { items } = await server.logs.list({}, { limit: 5 });
  t.match(items, [{ status: 400, error_code: 'invalid_request_body', operation: 'chat-completions' }]);

  const api = await answerTo(t, server, `POST /api/groups HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${AUTH_KEY}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
  t.equal(api.status, 400);
  t.equal(api.json['code'], 'MALFORMED_REQUEST');
});

t.test('a broken chunked body is answered with the request id of its record, in every header that carries one', async (t) => {
  const { server } = await start(t);
  const { keyValue } = await seedRoute(server.store, { channel: 'ch01', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'claude', upstream: 'v-claude' }], protocols: ['x-completions', 'x-messages'] });
  const chat = await answerTo(t, server, `${CHAT}authorization: Bearer ${keyValue}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
  const messages = await answerTo(t, server, `POST /v1/messages HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\nx-api-key: ${keyValue}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
  await server.logs.flush();
  const { items } = await server.logs.list({}, { limit: 5 });
  const recordOf = (operation: string) => items.find((r) => r.operation === operation)!;
  const chatId = recordOf('chat-completions').request_id;
  t.equal(chat.headers['x-switchyard-request-id'], chatId, 'the record this answer was logged as');
  t.equal(chat.headers['x-request-id'], chatId);
  const messagesId = recordOf('messages-create').request_id;
  t.match(messages.json, { type: 'error', error: { code: 'invalid_request_body' }, request_id: messagesId });
  t.equal(messages.headers['x-switchyard-request-id'], messagesId);
  t.equal(messages.headers['request-id'], messagesId, 'the header the anthropic SDK reads');
});

t.test('chunk extensions over node\'s limit are answered 413 with the body-size code, on both planes', async (t) => {
  const { server } = await start(t);
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'chat', upstream: 'v-chat' }], protocols: ['x-completions'] });
  const chunk = `2;ext=${'a'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`;
  const data = await answerTo(t, server, `${CHAT}authorization: Bearer ${keyValue}\r\ntransfer-encoding: chunked\r\n\r\n${chunk}`);
  t.equal(data.status, 413);
  t.equal(data.headers['connection'], 'close');
  t.match(data.json, { error: { code: 'request_too_large', message: /chunk extensions/ } });
  await server.logs.flush();
  const { items } = await server.logs.list({}, { limit: 5 });
  t.match(items, [{ status: 413, error_code: 'request_too_large', operation: 'chat-completions' }], 'the record says what the client was answered');
  t.equal(data.headers['x-switchyard-request-id'], items[0]?.request_id, 'the answer names its record');
  const api = await answerTo(t, server, `POST /api/groups HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${AUTH_KEY}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${chunk}`);
  t.equal(api.status, 413);
  t.equal(api.json['code'], 'REQUEST_TOO_LARGE');
});

t.test('on a keep-alive connection, the refused request after an answered one is read from its own head', async (t) => {
  const { server } = await start(t);
  const c = rawConnection(t, server.port);
  c.write(`GET /api/health HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${AUTH_KEY}\r\n\r\n`);
  t.equal((await c.next()).status, 200);
  c.write('POST /v1/messages HTTP/1.1\r\nhost: gw\r\nanthropic-version: 2023-06-01\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n');
  const refused = await c.next();
  await c.closed;
  t.equal(refused.status, 400);
  t.match(JSON.parse(refused.body), { type: 'error', error: { details: { error_code: 'malformed_request' } } }, 'the messages shape its head chooses');
});

t.test('a head past the headers deadline is answered 408 with a code, in the completions shape (nothing of it is given)', async (t) => {
  const { server, node } = await start(t);
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'chat', upstream: 'v-chat' }], protocols: ['x-completions'] });
  t.equal((await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${keyValue}` } })).status, 200);
  // node reads the deadline at each check of its connections: a short one, not 60 s.
  node()!.headersTimeout = 200;
  const answer = await answerTo(t, server, 'GET /v1/messages HTTP/1.1\r\nhost: gw\r\nanthropic-version: 2023-06-01\r\n');
  t.equal(answer.status, 408);
  t.equal(answer.headers['connection'], 'close');
  t.match(answer.json, { error: { code: 'request_headers_timeout', type: 'invalid_request_error' } });
});

t.test('a HEAD is answered without a body', async (t) => {
  const { server } = await start(t);
  const c = rawConnection(t, server.port);
  const received: Buffer[] = [];
  c.socket.on('data', (d: Buffer) => received.push(d));
  c.write('HEAD /v1/models HTTP/1.1\r\nhost: gw\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n');
  await c.closed;
  const text = Buffer.concat(received).toString('latin1');
  t.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/);
  t.match(text, /\r\ncontent-length: \d+\r\n/);
  t.ok(text.endsWith('\r\n\r\n'), 'the head alone');
});

// The body's last line runs into the HEAD's request line; one with spaces, as python's json.dumps writes, too.
for (const body of ['{}', '{"a": 1}']) t.test(`a HEAD pipelined right behind a body with no line end (${body}) is still read as a HEAD`, async (t) => {
  const { server } = await start(t);
  // The POST waits on its key's lookup and its upstream: the HEAD is refused while it is under way.
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'chat', upstream: 'v-chat' }], protocols: ['x-completions'] });
  const c = rawConnection(t, server.port);
  const received: Buffer[] = [];
  c.socket.on('data', (d: Buffer) => received.push(d));
  // One write: the POST's body and the refused HEAD's request line share a line of the packet.
  c.write(`${CHAT}authorization: Bearer ${keyValue}\r\ncontent-length: ${body.length}\r\n\r\n${body}HEAD /v1/models HTTP/1.1\r\nhost: gw\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n`);
  await c.closed;
  const text = Buffer.concat(received).toString('latin1');
  t.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/);
  t.ok(text.endsWith('\r\n\r\n'), 'the head alone, as a HEAD is answered');
});

t.test('nothing is written after an answer already sent: a broken chunk in a body drained after a 401 only ends the connection', async (t) => {
  const { server } = await start(t);
  const c = rawConnection(t, server.port);
  c.write(`${CHAT}authorization: Bearer not-a-key\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n`);
  const refused = await c.next();
  t.equal(refused.status, 401, 'refused before the body ended; the rest is drained');
  c.write('zz\r\n');
  await c.closed;
  t.equal(c.unread(), 0, 'no second answer to a request already answered');
});
