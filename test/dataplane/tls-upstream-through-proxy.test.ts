import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { tempDataDir } from '../management/support/gateway.ts';
import { call } from '../management/support/http-client.ts';
import { startHttpConnectProxy, type HttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { loopbackCert } from './helpers/loopback-server.ts';

const CERT_PATH = path.join(import.meta.dirname, 'fixtures/loopback-cert.pem');
const REALTIME_PATH = '/v1/audio/transcriptions/realtime';
const UPSTREAM_KEY = 'sk-upstream-tls-0001';

/**
 * `switchyard serve` as a real process, which trusts the test certificate only through
 * NODE_EXTRA_CA_CERTS: nothing in the gateway is told about it. SIGTERM and awaited at teardown.
 */
async function spawnGateway(t: Test) {
  const dataDir = tempDataDir(t);
  const child = spawnServe(['--port', '0', '--data', dataDir], { NODE_EXTRA_CA_CERTS: CERT_PATH });
  // Registered before the URL is awaited, so a gateway that fails to start is still stopped.
  t.teardown(async () => {
    child.kill('SIGTERM');
    await child.exit;
  });
  const url = await child.url;
  const authKey = readFileSync(path.join(dataDir, 'auth_key'), 'utf8').trim();
  const create = async (p: string, body: unknown) => {
    const res = await call(url, 'POST', p, { token: authKey, body, headers: { 'Idempotency-Key': randomUUID() } });
    if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${p}: ${res.status} ${res.text}`);
    return res.json.data;
  };
  return { url, create, stderr: child.stderr };
}

/** Group (with the proxy at Group scope), one imported API key, and an access key, all over the management API. */
async function configureRoute(gw: Awaited<ReturnType<typeof spawnGateway>>, o: { channel: string; protocol: string; baseUrl: string; proxyUrl: string; external: string; upstream: string }) {
  const group = await gw.create('/api/groups', { name: `tls-${o.channel}`, channel: o.channel, base_url: o.baseUrl, proxy_url: o.proxyUrl, models: [{ external: o.external, upstream: o.upstream }] });
  const imported = await gw.create(`/api/groups/${group.id}/credentials/import`, { credentials: UPSTREAM_KEY });
  if (imported.created.length !== 1) throw new Error(`credential import: ${JSON.stringify(imported)}`);
  const key = await gw.create('/api/access-keys', { name: 'client', protocols: [o.protocol] });
  return key.value as string;
}

async function listenTls(server: HttpsServer): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: HttpsServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function startProxy(t: Test): Promise<HttpConnectProxy> {
  // Credentials with characters that must be URL-encoded, so the Basic header is really built from the URL.
  const proxy = await startHttpConnectProxy({ username: 'relay', password: 'p@ss word' });
  t.teardown(() => proxy.close());
  return proxy;
}

t.test('an https upstream is reached through a group-scope CONNECT proxy, trusted by NODE_EXTRA_CA_CERTS', async (t) => {
  const seen: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
  const upstream = createHttpsServer(loopbackCert, async (req, res) => {
    let body = '';
    for await (const c of req) body += (c as Buffer).toString();
    seen.push({ url: req.url ?? '', headers: req.headers, body });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return void res.writeHead(404).end();
    const { model } = JSON.parse(body) as { model: string };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'cmpl-tls-1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'over tls' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
  });
  const baseUrl = await listenTls(upstream);
  t.teardown(() => closeServer(upstream));
  const proxy = await startProxy(t);
  const gw = await spawnGateway(t);
  const keyValue = await configureRoute(gw, { channel: 'ch02', protocol: 'x-completions', baseUrl, proxyUrl: proxy.url, external: 'team-model', upstream: 'vendor-model-tls' });

  const res = await call(gw.url, 'POST', '/v1/chat/completions', { token: keyValue, body: { model: 'team-model', messages: [{ role: 'user', content: 'hello' }] } });
  t.equal(res.status, 200, `200 from the gateway${res.status === 200 ? '' : `: ${res.text}`}`);
  t.match(res.json, { id: 'cmpl-tls-1', object: 'chat.completion', model: 'vendor-model-tls', choices: [{ message: { content: 'over tls' } }] }, 'the upstream body is relayed');
  t.equal(seen.length, 1, 'one request reached the upstream');
  t.equal(JSON.parse(seen[0]!.body).model, 'vendor-model-tls', 'the upstream got the mapped model');
  t.equal(seen[0]!.headers.authorization, `Bearer ${UPSTREAM_KEY}`, 'with the upstream credential');
  t.same(proxy.tunnels, [new URL(baseUrl).host], 'the connection went through the proxy');
  t.equal(proxy.refused, 0, 'with the proxy credentials of the URL');
});

t.test('a wss upstream is reached through a group-scope CONNECT proxy, trusted by NODE_EXTRA_CA_CERTS', async (t) => {
  const upgrades: IncomingMessage[] = [];
  const upstream = createHttpsServer(loopbackCert, (_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  upstream.on('upgrade', (req, socket, head) => {
    upgrades.push(req);
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  wss.on('connection', (ws) => ws.on('message', (data) => ws.send(`echo:${data.toString()}`)));
  const baseUrl = await listenTls(upstream);
  t.teardown(async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    await closeServer(upstream);
  });
  const proxy = await startProxy(t);
  const gw = await spawnGateway(t);
  const keyValue = await configureRoute(gw, { channel: 'ch03', protocol: 'x-suite', baseUrl, proxyUrl: proxy.url, external: 'voice', upstream: 'voice-up' });

  // Plain ws:// to the gateway; only the gateway-to-upstream leg is TLS.
  const client = new WebSocket(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  t.teardown(() => client.terminate());
  await new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('error', reject);
    client.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with ${res.statusCode}: ${gw.stderr()}`)));
  });
  const reply = new Promise<string>((resolve) => client.once('message', (d) => resolve(d.toString())));
  client.send('hello over wss');
  t.equal(await reply, 'echo:hello over wss', 'the frame round-trips through the gateway');
  t.equal(upgrades.length, 1, 'one upgrade reached the upstream');
  t.match(upgrades[0]!.url, /model=voice-up/, 'with the mapped model');
  t.equal(upgrades[0]!.headers.authorization, `Bearer ${UPSTREAM_KEY}`, 'and the upstream credential');
  t.same(proxy.tunnels, [new URL(baseUrl).host], 'the session went through the proxy');
  t.equal(proxy.refused, 0, 'with the proxy credentials of the URL');
  const closed = once(client, 'close');
  client.close(1000);
  await closed;
});
