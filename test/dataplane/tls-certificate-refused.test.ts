import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { WebSocketServer } from 'ws';
import { startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { completionJson, createKey, credentialView, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { loopbackCert, startLoopbackServer } from './helpers/loopback-server.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { logOf, realtimeRoute, upgradeAnswer } from './helpers/ws-upstream.ts';

// An https upstream whose certificate the gateway refuses (the data plane here trusts no extra
// CA): the gateway's trust store or the upstream's certificate is at fault, the same for every
// credential. Its own attempt code, no cooldown, and failover as after a connection never made.

const WAIT_MS = 20_000;
const MODELS = [{ external: 'team-model', upstream: 'vendor-model' }];
const CODE = 'upstream_tls_certificate_invalid';

const fixture = (name: string) => readFileSync(new URL(`fixtures/tls-identity/${name}.pem`, import.meta.url));

/** Certificates node refuses without a CA the gateway was told of, by the code node names. */
const CERTIFICATES = {
  'a self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)': loopbackCert,
  'a certificate of an unknown CA (UNABLE_TO_VERIFY_LEAF_SIGNATURE)': { cert: fixture('ip-only-cert'), key: fixture('ip-only-key') },
};

/** Proxies in front of the upstream: none, an HTTP CONNECT proxy, a SOCKS5 proxy. */
const ROUTES: Record<string, (t: Test) => Promise<string | undefined>> = {
  directly: async () => undefined,
  'through a CONNECT proxy': async (t) => {
    const proxy = await startHttpConnectProxy();
    t.teardown(() => proxy.close());
    return proxy.url;
  },
  'through a SOCKS5 proxy': async (t) => {
    const proxy = await startSocks5Server();
    t.teardown(() => proxy.close());
    return proxy.url;
  },
};

/** An https upstream with `certificate`; counts the requests that reached it. */
async function httpsUpstream(t: Test, certificate: { cert: Buffer; key: Buffer }, onUpgrade?: WebSocketServer) {
  let served = 0;
  const upstream = await startLoopbackServer(
    (_req, res) => {
      served++;
      res.end('{}');
    },
    { tls: certificate },
  );
  t.teardown(() => upstream.close());
  if (onUpgrade !== undefined) upstream.server.on('upgrade', (req, socket, head) => onUpgrade.handleUpgrade(req, socket, head, () => served++));
  return { url: upstream.url, served: () => served };
}

function post(gw: Gateway, path: string, keyValue: string, body: unknown): Promise<Response> {
  return withTimeout(
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    WAIT_MS,
    'the gateway to answer',
  );
}

for (const [route, startProxy] of Object.entries(ROUTES)) {
  for (const [certificate, pair] of Object.entries(CERTIFICATES)) {
    t.test(`${route}, ${certificate}: ${CODE}, 502 upstream_unreachable naming it, the Group's other credential not tried, both still active`, async (t) => {
      const upstream = await httpsUpstream(t, pair);
      const proxy = await startProxy(t);
      const gw = await gateway(t);
      const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-cert-a', 'sk-cert-b'] });
      if (proxy !== undefined) await gw.store.groups.update(group.id, { proxy_url: proxy });
      const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

      const res = await post(gw, '/v1/chat/completions', keyValue, { model: 'team-model', messages: [] });
      t.equal(res.status, 502);
      t.match(await res.json(), { error: { code: 'upstream_unreachable', message: `No upstream could be reached. (${CODE})` } });
      t.equal(upstream.served(), 0, 'nothing reached the upstream');
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 502, error_code: 'upstream_unreachable' });
      // Both credentials are at the Group's address: the other would reach the same certificate.
      t.same(
        record.attempts.map((a) => ({ status: a.status, error_code: a.error_code })),
        [{ status: null, error_code: CODE }],
      );
      for (const credential of credentials) t.equal((await credentialView(gw.store, group.id, credential.id)).state, 'active', `credential ${credential.id} is not blamed`);
    });
  }
}

t.test("a refused certificate at the Group's address: the Group's credential there behind a proxy of its own is still tried", async (t) => {
  const upstream = await httpsUpstream(t, loopbackCert);
  const proxy = await startHttpConnectProxy();
  t.teardown(() => proxy.close());
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-cert-direct', 'sk-cert-proxied'] });
  await gw.store.credentials.update(group.id, credentials[1]!.id, { proxy_url: proxy.url });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  const res = await post(gw, '/v1/chat/completions', keyValue, { model: 'team-model', messages: [] });
  t.equal(res.status, 502);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  // Through the proxy the certificate is refused the same way: each way to the address was tried once.
  t.same(
    record.attempts.map((a) => a.error_code),
    [CODE, CODE],
  );
  t.equal(proxy.tunnels.length, 1, 'the credential behind its own proxy was tried');
});

t.test('embeddings (unsafe to replay) go on to the next Group after a refused certificate: nothing was delivered', async (t) => {
  const refused = await httpsUpstream(t, loopbackCert);
  const healthy = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5] }], model: 'vendor-model', usage: { prompt_tokens: 1, total_tokens: 1 } }));
  });
  t.teardown(() => healthy.close());
  const gw = await gateway(t);
  const first = await seedGroup(gw.store, { channel: 'ch03', baseUrl: refused.url, models: MODELS, secrets: ['sk-cert-1'], priority: 10 });
  const second = await seedGroup(gw.store, { channel: 'ch03', baseUrl: healthy.url, models: MODELS, secrets: ['sk-healthy-1'], priority: 0 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-chat-embeddings'] });

  const res = await post(gw, '/v1/embeddings', keyValue, { model: 'team-model', input: 'x' });
  t.equal(res.status, 200, 'the second Group serves');
  t.equal(refused.served(), 0);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, attempts: [{ group_id: String(first.group.id), status: null, error_code: CODE }, { group_id: String(second.group.id), status: 200 }] });
  t.equal((await credentialView(gw.store, first.group.id, first.credentials[0]!.id)).state, 'active');
});

for (const [route, startProxy] of Object.entries(ROUTES)) {
  t.test(`a wss upstream ${route} with a self-signed certificate: ${CODE}, no cooldown`, async (t) => {
    const wss = new WebSocketServer({ noServer: true });
    t.teardown(() => wss.close());
    const upstream = await httpsUpstream(t, loopbackCert, wss);
    const proxy = await startProxy(t);
    const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-cert-a', 'sk-cert-b'] });
    if (proxy !== undefined) await gw.store.groups.update(group.id, { proxy_url: proxy });

    const answer = await withTimeout(upgradeAnswer(wsUrl), WAIT_MS, 'the upgrade answer');
    t.equal(answer.status, 502);
    t.match(JSON.parse(answer.body), { error: { code: 'upstream_unreachable', message: new RegExp(`\\(${CODE}\\)`) } });
    t.equal(upstream.served(), 0, 'nothing reached the upstream');
    t.same(
      (await logOf(gw, key.id, 502)).attempts.map((a: { status: number | null; error_code: string | null }) => ({ status: a.status, error_code: a.error_code })),
      [{ status: null, error_code: CODE }],
      "one attempt: the Group's other credential is at the same address",
    );
    t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
  });
}

t.test("a refused certificate at a credential's own address goes on to the Group's next credential: another address, another certificate", async (t) => {
  const refused = await httpsUpstream(t, loopbackCert);
  const healthy = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completionJson('vendor-model'));
  });
  t.teardown(() => healthy.close());
  const gw = await gateway(t);
  // ch32's credentials carry their own base URL: the first one's is the refused upstream.
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch32', baseUrl: healthy.url, models: MODELS, secrets: ['sk-own-refused', 'sk-healthy'] });
  await gw.store.credentials.update(group.id, credentials[0]!.id, { values: { api_key: 'sk-own-refused', base_url: refused.url }, secretFields: ['api_key'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  const attempts: unknown[] = [];
  // Round-robin starts anywhere: two requests start once at the refused credential.
  for (let i = 0; i < 2; i++) {
    const res = await post(gw, '/v1/chat/completions', keyValue, { model: 'team-model', messages: [] });
    t.equal(res.status, 200, 'served');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    attempts.push(record.attempts.map((a) => ({ credential_id: a.credential_id, status: a.status, error_code: a.error_code })));
  }
  t.same(
    attempts.find((a) => (a as unknown[]).length === 2),
    [
      { credential_id: String(credentials[0]!.id), status: null, error_code: CODE },
      { credential_id: String(credentials[1]!.id), status: 200, error_code: null },
    ],
    'the refused credential, then the next one',
  );
  t.equal(refused.served(), 0);
  for (const credential of credentials) t.equal((await credentialView(gw.store, group.id, credential.id)).state, 'active', `credential ${credential.id} is not blamed`);
});
