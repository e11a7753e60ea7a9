import { once } from 'node:events';
import { createSecureServer } from 'node:http2';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { classifyUpstreamError } from '../../src/upstream/index.ts';
import { noteRequestWritten } from '../../src/upstream/request-written.ts';
import { startDataPlane, startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { loopbackCert } from './helpers/loopback-server.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';

// https upstreams whose TLS handshake fails or never ends (spec: a connection never made is
// a connect failure, safe to fail over even for an operation unsafe to replay; a connect
// timeout is the upstream's, answered 504, and cools its credential down; a managed proxy
// that does not answer is the gateway's side, proxy_unreachable, no cooldown).

// The connect timeout (10 s) runs out in the timeout tests; each waits for it once.
t.setTimeout(120_000);
const GENEROUS_WAIT_MS = 30_000;

const MODELS = [{ external: 'team-model', upstream: 'vendor-model' }];

async function gateway(t: Test): Promise<Gateway> {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  return gw;
}

/** A TCP server that accepts connections and never says a word: a TLS handshake with it never ends. */
async function silentServer(t: Test): Promise<{ port: number; accepted: () => number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: TcpServer = createTcpServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

async function chat(gw: Gateway, keyValue: string): Promise<Response> {
  const res = await withTimeout(
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-model', messages: [] }) }),
    GENEROUS_WAIT_MS,
    'the gateway to answer',
  );
  await res.clone().arrayBuffer();
  return res;
}

/** A Group on `baseUrl` behind `proxyUrl`, one credential, and an AccessKey for chat. */
async function proxiedRoute(gw: Gateway, baseUrl: string, proxyUrl: string) {
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl, models: MODELS, secrets: ['sk-upstream-tls-1'] });
  await gw.store.groups.update(group.id, { proxy_url: proxyUrl });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  return { group, credential: credentials[0]!, keyValue };
}

for (const kind of ['SOCKS5', 'CONNECT'] as const) {
  t.test(`through a ${kind} proxy, an https upstream that never finishes the TLS handshake: 504 upstream_timeout, the credential cools down`, async (t) => {
    const silent = await silentServer(t);
    const proxy = kind === 'SOCKS5' ? await startSocks5Server() : await startHttpConnectProxy();
    t.teardown(() => proxy.close());
    const gw = await gateway(t);
    const { group, credential, keyValue } = await proxiedRoute(gw, `https://127.0.0.1:${silent.port}`, proxy.url);

    const res = await chat(gw, keyValue);
    t.equal(res.status, 504);
    t.match(await res.json(), { error: { code: 'upstream_timeout' } });
    t.equal(silent.accepted(), 1, 'the proxy did reach the upstream');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 504, attempts: [{ credential_id: String(credential.id), status: null, error_code: 'upstream_connect_timeout' }] });
    t.equal((await credentialView(gw.store, group.id, credential.id)).state, 'cooldown', 'the upstream is blamed, not the proxy');
  });
}

t.test('a CONNECT proxy that never answers CONNECT is still proxy_unreachable, no credential cooled down', async (t) => {
  const silentProxy = await silentServer(t);
  const upstream = await silentServer(t);
  const gw = await gateway(t);
  const { group, credential, keyValue } = await proxiedRoute(gw, `https://127.0.0.1:${upstream.port}`, `http://127.0.0.1:${silentProxy.port}`);

  const res = await chat(gw, keyValue);
  t.equal(res.status, 502);
  t.match(await res.json(), { error: { code: 'proxy_unreachable' } });
  t.equal(silentProxy.accepted(), 1, 'the gateway reached the proxy');
  t.equal(upstream.accepted(), 0, 'nothing reached the upstream');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { attempts: [{ credential_id: String(credential.id), error_code: 'proxy_unreachable' }] });
  t.equal((await credentialView(gw.store, group.id, credential.id)).state, 'active');
});

/** Upstreams an https base URL cannot open a TLS session with. */
const BROKEN_TLS_UPSTREAMS = {
  // ECONNRESET, a code that after a request was written means "maybe delivered": before it, nothing was.
  'a server that resets the connection during the handshake': async (t: Test) => {
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.once('data', () => socket.resetAndDestroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.teardown(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, served: () => 0, code: 'upstream_connection_lost' };
  },
  'a plain-HTTP port': async (t: Test) => {
    const plain = await startUpstream((_req, res) => void res.end('{}'));
    t.teardown(() => plain.close());
    return { url: plain.url.replace('http:', 'https:'), served: () => plain.requests.length, code: 'upstream_connect_failed' };
  },
  'an HTTP/2-only server': async (t: Test) => {
    const h2 = createSecureServer({ ...loopbackCert, allowHTTP1: false });
    let streams = 0;
    h2.on('stream', (stream) => {
      streams++;
      stream.respond({ ':status': 200 });
      stream.end('{}');
    });
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    t.teardown(() => new Promise<void>((resolve) => h2.close(() => resolve())));
    return { url: `https://127.0.0.1:${(h2.address() as AddressInfo).port}`, served: () => streams, code: 'upstream_connect_failed' };
  },
};

for (const [name, start] of Object.entries(BROKEN_TLS_UPSTREAMS)) {
  t.test(`embeddings (unsafe to replay) fail over from an https base URL on ${name}: nothing was delivered`, async (t) => {
    const broken = await start(t);
    const healthy = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5] }], model: 'vendor-model', usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
    t.teardown(() => healthy.close());
    const gw = await gateway(t);
    const first = await seedGroup(gw.store, { channel: 'ch03', baseUrl: broken.url, models: MODELS, secrets: ['sk-broken-1'], priority: 10 });
    const second = await seedGroup(gw.store, { channel: 'ch03', baseUrl: healthy.url, models: MODELS, secrets: ['sk-healthy-1'], priority: 0 });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-chat-embeddings'] });

    const res = await withTimeout(
      fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-model', input: 'x' }) }),
      GENEROUS_WAIT_MS,
      'the gateway to answer',
    );
    t.equal(res.status, 200, 'the second Group serves');
    t.match(await res.json(), { data: [{ embedding: [0.5] }] });
    t.equal(broken.served(), 0, 'the broken upstream served nothing');
    t.equal(healthy.requests.length, 1);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, {
      status: 200,
      attempts: [
        { group_id: String(first.group.id), status: null, error_code: broken.code },
        { group_id: String(second.group.id), status: 200 },
      ],
    });
    t.equal((await credentialView(gw.store, first.group.id, first.credentials[0]!.id)).state, 'cooldown');
  });
}

t.test('a TLS error on a request undici had started writing is a broken session, which may have been delivered', async (t) => {
  const error = Object.assign(new Error('decryption failed or bad record mac'), { code: 'ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC' });
  noteRequestWritten(error, true);
  t.same(classifyUpstreamError(error), { kind: 'connection_lost', notDelivered: false, code: 'upstream_connection_lost' });
  const before = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
  noteRequestWritten(before, false);
  t.match(classifyUpstreamError(before), { kind: 'connection_lost', notDelivered: true }, 'a connection lost before the request was written delivered nothing');
});

t.test('certificate verification failures, whatever their code, mean nothing was delivered, and are told apart from other TLS failures', async (t) => {
  // OpenSSL's X509 verification results as node names them, and node's own name check.
  for (const code of ['CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
    const error = Object.assign(new Error(code), { code });
    const refused = { kind: 'connect_failed', notDelivered: true, certificateRefused: true, code: 'upstream_tls_certificate_invalid' };
    t.same(classifyUpstreamError(error), refused, code);
    t.same(classifyUpstreamError(error, { viaProxy: true }), refused, `${code} inside a tunnel is the upstream's`);
  }
  // No common protocol, a plain-HTTP port: the upstream's connection failing, as before.
  for (const code of ['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL']) {
    const error = Object.assign(new Error(code), { code });
    t.same(classifyUpstreamError(error), { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' }, code);
  }
});
