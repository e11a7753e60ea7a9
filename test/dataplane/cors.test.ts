import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { completionJson, readIncrementally } from './helpers/dataplane-scenarios.ts';

// The data plane is open to any origin (its keys travel in headers, never cookies); the
// management plane is not. Through the server `switchyard serve` runs, in front of a substitute upstream.

const AUTH_KEY = 'cors-auth-key-0123456789abcdef0123';
const ORIGIN = 'https://tool.example';
const EXPOSED = 'x-switchyard-request-id, x-request-id, request-id, retry-after, retry-after-ms, x-should-retry';

async function serve(t: Test) {
  const upstream = await startUpstream((req, res) => {
    if (req.body.includes('"refused"')) {
      // An upstream's own CORS answer, which must not reach the client over the gateway's.
      res.writeHead(400, { 'content-type': 'application/json', 'access-control-allow-origin': 'https://upstream.example', 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'x-upstream-only' });
      res.end('{"error":{"message":"refused","type":"invalid_request_error"}}');
      return;
    }
    if (req.body.includes('"stream":true')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[]}\n\ndata: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completionJson('vendor-chat'));
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-cors-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = async (p: string, body: unknown) => {
    const res = await fetch(`${server.url}${p}`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }, body: JSON.stringify(body) });
    return ((await res.json()) as { data: Record<string, any> }).data;
  };
  const group = await api('/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }] });
  await api(`/api/groups/${group.id}/credentials/import`, { credentials: 'sk-upstream-cors-0001' });
  const key = (await api('/api/access-keys', { name: 'k', protocols: ['x-completions', 'x-responses'] })).value as string;
  /** Whether the data plane logged the request this answer names. */
  const logged = async (res: Response) => {
    await server.logs.flush();
    return (await server.logs.get(res.headers.get('x-switchyard-request-id')!)) !== undefined;
  };
  return { server, upstream, key, logged };
}

const preflight = (url: string, method: string, headers: Record<string, string> = { 'access-control-request-headers': 'authorization,content-type' }) =>
  fetch(url, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': method, ...headers } });

t.test('a preflight of a data-plane endpoint is answered 204 with its methods, without a key, and not logged', async (t) => {
  const { server, upstream, logged } = await serve(t);
  for (const [p, method, methods] of [
    ['/v1/chat/completions', 'POST', 'POST'],
    ['/v1/messages', 'POST', 'POST'],
    ['/v1/models', 'GET', 'GET, HEAD'],
    ['/v1/responses/resp_1', 'DELETE', 'DELETE, GET'],
    // A passthrough path takes any method: the one asked for.
    ['/v1/responses/resp_1/extra/input_items', 'PATCH', 'PATCH'],
  ] as const) {
    const res = await preflight(`${server.url}${p}`, method);
    t.equal(res.status, 204, p);
    t.equal(res.headers.get('access-control-allow-origin'), '*', p);
    t.equal(res.headers.get('access-control-allow-methods'), methods, p);
    t.equal(res.headers.get('access-control-allow-headers'), 'authorization,content-type', p);
    t.equal(res.headers.get('access-control-max-age'), '600', p);
    t.ok(res.headers.get('x-switchyard-request-id'), `${p}: the request id is there`);
    t.equal(await logged(res), false, `${p}: not logged`);
  }
  t.same(upstream.requests, [], 'the upstream saw none');
});

t.test('a preflight of genai models.get() under /v1 of a name with a slash is answered: the data plane serves that path', async (t) => {
  const { server } = await serve(t);
  await server.store.groups.create({ name: 'gen', channel: 'ch15', base_url: 'http://127.0.0.1:9', models: [{ external: 'org/name', upstream: 'u' }] });
  const key = (await server.store.accessKeys.create({ name: 'gen', protocols: ['x-generate'] })).value;
  // What Chromium sends before the genai SDK's GET: the headers it adds, lowercased and sorted.
  const asked = 'content-type,x-goog-api-client,x-goog-api-key';
  const pre = await preflight(`${server.url}/v1/models/org/name`, 'GET', { 'access-control-request-headers': asked });
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), '*');
  t.equal(pre.headers.get('access-control-allow-methods'), 'GET, HEAD');
  t.equal(pre.headers.get('access-control-allow-headers'), asked);
  const read = await fetch(`${server.url}/v1/models/org/name`, { headers: { origin: ORIGIN, 'content-type': 'application/json', 'x-goog-api-key': key, 'x-goog-api-client': 'google-genai-sdk/2.32.0 gl-node/web' } });
  t.equal(read.status, 200);
  t.equal(read.headers.get('access-control-allow-origin'), '*');
  t.match(await read.json(), { name: 'models/org/name' });
});

t.test('a preflight asking for headers that are no header-name list gets no Access-Control-Allow-Headers', async (t) => {
  const { server } = await serve(t);
  const res = await preflight(`${server.url}/v1/chat/completions`, 'POST', { 'access-control-request-headers': 'authorization, bad(name)' });
  t.equal(res.status, 204);
  t.equal(res.headers.get('access-control-allow-headers'), null);
  t.equal(res.headers.get('access-control-allow-methods'), 'POST');
});

t.test('an OPTIONS that is no preflight keeps its 405, an unknown path its 404, both logged and open to the origin', async (t) => {
  const { server, logged } = await serve(t);
  const plain = await fetch(`${server.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: ORIGIN } });
  t.equal(plain.status, 405);
  t.equal(plain.headers.get('allow'), 'POST');
  t.equal(plain.headers.get('access-control-allow-origin'), '*');
  t.equal(plain.headers.get('access-control-allow-methods'), null);
  t.equal(await logged(plain), true);
  const unknown = await preflight(`${server.url}/v1/no-such-endpoint`, 'POST');
  t.equal(unknown.status, 404);
  t.equal(unknown.headers.get('access-control-allow-origin'), '*');
  t.equal(await logged(unknown), true);
});

t.test('every data-plane answer to a request naming its Origin is open to it and exposes the request ids and retry hints', async (t) => {
  const { server, key } = await serve(t);
  const headers = { origin: ORIGIN, authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const answers = {
    forwarded: await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'chat', messages: [] }) }),
    streamed: await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'chat', stream: true, messages: [] }) }),
    'upstream error': await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'chat', messages: [], user: 'refused' }) }),
    'model list': await fetch(`${server.url}/v1/models`, { headers }),
    'gateway error': await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' }, body: '{}' }),
  };
  t.same(Object.values(answers).map((r) => r.status), [200, 200, 400, 200, 401]);
  t.match(await readIncrementally(answers.streamed), /\[DONE\]/);
  for (const [what, res] of Object.entries(answers)) {
    t.equal(res.headers.get('access-control-allow-origin'), '*', what);
    t.equal(res.headers.get('access-control-expose-headers'), EXPOSED, what);
    t.equal(res.headers.get('access-control-allow-credentials'), null, what);
  }
  const sameOrigin = await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(sameOrigin.status, 200);
  t.equal(sameOrigin.headers.get('access-control-allow-origin'), null, 'no Origin, no CORS headers');
});

t.test('the management plane is not opened to other origins', async (t) => {
  const { server } = await serve(t);
  const pre = await preflight(`${server.url}/api/groups`, 'GET');
  t.equal(pre.headers.get('access-control-allow-origin'), null);
  const read = await fetch(`${server.url}/api/groups`, { headers: { origin: ORIGIN, authorization: `Bearer ${AUTH_KEY}` } });
  t.equal(read.status, 200);
  t.equal(read.headers.get('access-control-allow-origin'), null);
});
