import { randomUUID } from 'node:crypto';
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

// RFC 9110 §7.8: a server may ignore Upgrade. An upgrade the gateway does not serve (h2c, which
// curl --http2 and Java's HttpClient send on http://; a WebSocket one to a path that opens no
// session) is served as the HTTP/1.1 request it also is, on either plane, body and keep-alive included.

const AUTH_KEY = 'upgrade-plain-auth-key-0123456789abcdef';
const H2C = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n';
const WEBSOCKET = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';

async function setup(t: Test) {
  const upstream = await startUpstream((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'v-a', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }));
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-upgrade-plain-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions', 'x-messages', 'x-generate'] });
  return { server, upstream, keyValue };
}

t.test('an h2c upgrade GET of the model list is answered the 200 list over HTTP/1.1, and the next request on the connection is served', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\n\r\n`);
  const listed = await c.next();
  t.equal(listed.status, 200, 'no 101: the upgrade is ignored');
  t.same(JSON.parse(listed.body).data.map((m: { id: string }) => m.id), ['m-a']);
  t.notOk(listed.headers['upgrade'], 'no Upgrade in the answer');
  t.equal(listed.headers['connection'], 'keep-alive');

  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${s.keyValue}\r\n\r\n`);
  t.equal((await c.next()).status, 200, 'a plain request after it on the same connection');
  c.write(`GET /v1/models/m-a HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\n\r\n`);
  t.equal(JSON.parse((await c.next()).body).id, 'm-a', 'and another upgrade request after that');
});

t.test('an h2c upgrade POST of a chat completion, its body sent after its head, reaches the upstream without the upgrade and is answered 200; the connection stays usable', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  const body = JSON.stringify({ model: 'm-a', messages: [{ role: 'user', content: 'hi' }] });
  c.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 7)}`);
  // The rest of the body comes once the gateway has had the head (the upgrade event's own bytes end mid-body).
  await new Promise((resolve) => setImmediate(resolve));
  c.write(body.slice(7));
  const answer = await c.next();
  t.equal(answer.status, 200);
  t.equal(JSON.parse(answer.body).id, 'chatcmpl-1');
  t.equal(s.upstream.requests.length, 1, 'the upstream had the request');
  const forwarded = s.upstream.requests[0]!;
  t.same(JSON.parse(forwarded.body.toString()), { model: 'v-a', messages: [{ role: 'user', content: 'hi' }] }, 'with the whole body');
  t.notOk(forwarded.headers['upgrade'], 'no Upgrade upstream');
  t.notOk(forwarded.headers['http2-settings'], 'nor HTTP2-Settings');

  const chunked = JSON.stringify({ model: 'm-a', messages: [{ role: 'user', content: 'again' }] });
  c.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunked.length.toString(16)}\r\n${chunked}\r\n0\r\n\r\n`);
  t.equal((await c.next()).status, 200, 'a chunked body on the same connection');
  t.match(JSON.parse(s.upstream.requests[1]!.body.toString()), { messages: [{ content: 'again' }] });
});

t.test('an upgrade request pipelined behind one still being answered is served after it, in order', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  const body = JSON.stringify({ model: 'm-a', messages: [{ role: 'user', content: 'first' }] });
  // One write: the upgrade request is read while the chat completion waits for its upstream.
  c.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${s.keyValue}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
      `GET /v1/models HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\n\r\n`,
  );
  const first = await c.next();
  t.equal(JSON.parse(first.body).id, 'chatcmpl-1', 'the chat completion first');
  const second = await c.next();
  t.equal(second.status, 200);
  t.equal(JSON.parse(second.body).object, 'list', 'then the model list');
});

t.test('a WebSocket upgrade to an endpoint that opens no session is served as a plain request', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}Authorization: Bearer ${s.keyValue}\r\n\r\n`);
  const listed = await c.next();
  t.equal(listed.status, 200);
  t.same(JSON.parse(listed.body).data.map((m: { id: string }) => m.id), ['m-a']);

  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}anthropic-version: 2023-06-01\r\nx-api-key: ${s.keyValue}\r\n\r\n`);
  const messages = await c.next();
  t.equal(messages.status, 200);
  t.match(JSON.parse(messages.body), { data: [{ type: 'model', id: 'm-a' }], has_more: false }, 'the messages-style list');
  t.equal(messages.headers['request-id'], messages.headers['x-switchyard-request-id'], 'with the request-id the anthropic SDK reads');
});

t.test('refusals of upgrade requests come in the error shape an ordinary request to the same path gets', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(`GET /v1beta/nope HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}x-goog-api-key: ${s.keyValue}\r\n\r\n`);
  const generate = await c.next();
  t.equal(generate.status, 404);
  t.match(JSON.parse(generate.body), { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'route_not_found' }] } }, 'generate-shaped under /v1beta');

  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${H2C}anthropic-version: 2023-06-01\r\nx-api-key: sy-not-a-key\r\n\r\n`);
  const messages = await c.next();
  t.equal(messages.status, 401);
  t.match(JSON.parse(messages.body), { type: 'error', error: { type: 'authentication_error', code: 'access_key_invalid' } }, 'messages-shaped for an anthropic-version model list');

  c.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}Authorization: Bearer ${s.keyValue}\r\nContent-Length: 0\r\n\r\n`);
  const completions = await c.next();
  t.equal(completions.status, 400, 'a WebSocket upgrade to an HTTP endpoint is that endpoint\'s request, not an unknown route');
  t.match(JSON.parse(completions.body), { error: { type: 'invalid_request_error', code: 'invalid_json' } }, 'its empty body refused as such, completions-shaped');
  t.equal(s.upstream.requests.length, 0);
});

t.test('the management plane serves an upgrade request as a plain one, body included', async (t) => {
  const s = await setup(t);
  const c = rawConnection(t, s.server.port);
  c.write(`GET /api/settings HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${AUTH_KEY}\r\n\r\n`);
  const settings = await c.next();
  t.equal(settings.status, 200);
  t.match(JSON.parse(settings.body), { code: 0, data: { max_attempts_per_request: Number } });

  const body = JSON.stringify({ name: 'over-h2c', protocols: ['x-completions'] });
  c.write(`POST /api/access-keys HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}Authorization: Bearer ${AUTH_KEY}\r\nIdempotency-Key: ${randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  const created = await c.next();
  t.equal(created.status, 201, created.body);
  t.ok((await s.server.store.accessKeys.list()).some((k) => k.name === 'over-h2c'), 'the key was created from the body');
});

t.test('many upgrade requests on one connection: no listener piles up on it, and a shutdown ends the idle connection', async (t) => {
  const s = await setup(t);
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const c = rawConnection(t, s.server.port);
  for (let i = 0; i < 15; i++) {
    c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${H2C}Authorization: Bearer ${s.keyValue}\r\n\r\n`);
    t.equal((await c.next()).status, 200);
  }
  await new Promise((resolve) => setImmediate(resolve));
  t.same(
    warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
    [],
    'no listener leak warning',
  );
  await withTimeout(s.server.close(), 5000, 'the server to close');
  await withTimeout(c.closed, 5000, 'the idle connection to be ended');
  t.pass('closed');
});
