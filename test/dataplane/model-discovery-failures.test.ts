import { once } from 'node:events';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';

const AUTH_KEY = 'discovery-failures-auth-key-0123456789abcdef';
const UPSTREAM_KEY = 'sk-up-discovery-failure-secret-000001';
const PROXY_PASSWORD = 'proxy-pa55word-never-shown';
const MIB = 1024 * 1024;

interface DiscoverAnswer {
  status: number;
  text: string;
  body: { code: string; data: { reason?: string; upstream_status?: number; detail?: string; models?: unknown[] } };
}

/** The gateway with real discovery, and a Group (ch02 unless said) at `baseUrl` with one credential holding `values`. */
async function startGateway(t: Test, baseUrl: string | null, values: Record<string, string> = { api_key: UPSTREAM_KEY }, { channel = 'ch02', kind = 'api_key' } = {}) {
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const group = await server.store.groups.create({ name: 'g', channel, base_url: baseUrl, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind, values, secretFields: Object.keys(values) }]);
  const discover = async (): Promise<DiscoverAnswer> => {
    const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as DiscoverAnswer['body'] };
  };
  return { server, group, discover: () => withTimeout(discover(), 60_000, 'the discovery answer') };
}

/** A loopback port nothing listens on: a server's, closed again. */
async function closedPort(): Promise<number> {
  const server = createHttpServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function assertNoSecrets(t: Test, text: string): void {
  t.notMatch(text, UPSTREAM_KEY, 'the credential is not in the answer');
  t.notMatch(text, PROXY_PASSWORD, 'nor is the proxy password');
}

t.test('DISC on an upstream whose list runs past 4 MiB: 502 discovery_failed, and the upstream call is cut off', async (t) => {
  // A list that never ends, 1 MiB of entries at a time, up to 64 MiB (so a gateway without the cap would get it whole and list it).
  const LIMIT = 64 * MIB;
  const entry = '{"id":"m-padding-padding-padding-padding"},';
  const chunk = Buffer.from(entry.repeat(Math.floor(MIB / entry.length)));
  const sent = { bytes: 0, closedEarly: false };
  const upstream = await startUpstream(async (_req: RecordedUpstreamRequest, res: ServerResponse) => {
    const closed = once(res, 'close').then(() => 'closed' as const);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"object":"list","data":[');
    while (sent.bytes < LIMIT) {
      sent.bytes += chunk.length;
      if (!res.write(chunk) && (await Promise.race([once(res, 'drain').then(() => 'drained' as const), closed])) === 'closed') break;
      if (res.destroyed) break;
    }
    if (sent.bytes < LIMIT) sent.closedEarly = true;
    else res.end('{"id":"m-a"}]}');
  });
  t.teardown(() => upstream.close());
  const { discover } = await startGateway(t, upstream.url);
  const { status, text, body } = await discover();
  t.equal(status, 502, text);
  t.equal(body.code, 'BAD_GATEWAY');
  t.same(body.data, { reason: 'discovery_failed', detail: 'the upstream list is larger than 4 MiB' });
  t.equal(upstream.requests.length, 1);
  // Wait for the upstream's writer to see the connection go (or reach its end, which fails the test).
  await withTimeout(
    (async () => {
      while (!sent.closedEarly && sent.bytes < LIMIT) await new Promise((r) => setTimeout(r, 20));
    })(),
    30_000,
    'the upstream connection to close',
  );
  t.ok(sent.closedEarly, `the gateway closed the upstream connection before the whole list (${sent.bytes} of ${LIMIT} bytes written)`);
  assertNoSecrets(t, text);
});

/** A ch02 list page: `{"object":"list","data":[...ids]}`, padded with spaces before its last brace to `bytes` bytes when given. */
function listPage(ids: string[], bytes = 0): string {
  const text = JSON.stringify({ object: 'list', data: ids.map((id) => ({ id })) });
  return `${text.slice(0, -1)}${' '.repeat(Math.max(0, bytes - Buffer.byteLength(text)))}}`;
}

async function discoverPage(t: Test, page: string) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(page);
  });
  t.teardown(() => upstream.close());
  const { discover } = await startGateway(t, upstream.url);
  return discover();
}

t.test('DISC reads a page of exactly 4 MiB and refuses one a byte longer', async (t) => {
  const atCap = await discoverPage(t, listPage(['m-a', 'm-b'], 4 * MIB));
  t.equal(atCap.status, 200, atCap.text.slice(0, 300));
  t.same(atCap.body.data.models, [{ id: 'm-a', configured: true }, { id: 'm-b', configured: false }]);
  const over = await discoverPage(t, listPage(['m-a', 'm-b'], 4 * MIB + 1));
  t.equal(over.status, 502, over.text);
  t.same(over.body.data, { reason: 'discovery_failed', detail: 'the upstream list is larger than 4 MiB' });
});

t.test('DISC refuses a page nested more than 32 levels deep before parsing it, and reads one 32 deep', async (t) => {
  // The answer's object is the first level, `data` the second.
  const nested = (levels: number) => `{"object":"list","data":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
  const deep = await discoverPage(t, nested(33));
  t.equal(deep.status, 502, deep.text);
  t.equal(deep.body.code, 'BAD_GATEWAY');
  t.same(deep.body.data, { reason: 'discovery_failed', detail: 'the upstream list is nested more than 32 levels deep' });
  const atLimit = await discoverPage(t, nested(32));
  t.equal(atLimit.status, 200, atLimit.text);
  t.same(atLimit.body.data.models, [], 'its entries are not models');
  // A megabyte of it: what took JSON.parse seconds at the old 16 MiB cap.
  const huge = await discoverPage(t, `{"data":${'['.repeat(MIB)}${']'.repeat(MIB)}}`);
  t.same(huge.body.data, { reason: 'discovery_failed', detail: 'the upstream list is nested more than 32 levels deep' });
});

t.test('DISC counts no bracket inside a string, an escaped quote not ending it', async (t) => {
  const ids = ['['.repeat(40), '"' + '{['.repeat(40), 'm-a\\', '\\"' + '['.repeat(40)];
  const { status, text, body } = await discoverPage(t, listPage(ids));
  t.equal(status, 200, text);
  t.same(
    body.data.models?.map((m) => (m as { id: string }).id),
    ids,
  );
});

t.test('DISC on an upstream whose address refuses connections: 502 discovery_failed saying it could not connect', async (t) => {
  const { discover } = await startGateway(t, `http://127.0.0.1:${await closedPort()}`);
  const { status, text, body } = await discover();
  t.equal(status, 502, text);
  t.equal(body.code, 'BAD_GATEWAY');
  t.equal(body.data.reason, 'discovery_failed');
  t.match(body.data.detail, /^could not connect to the upstream/);
  t.notOk('upstream_status' in body.data, 'the upstream gave no status');
  assertNoSecrets(t, text);
});

t.test('DISC through a managed proxy that refuses the gateway\'s login (407): 502 discovery_failed naming the proxy, without its password', async (t) => {
  const proxy = await startHttpConnectProxy({ username: 'gw', password: 'the-right-password' });
  t.teardown(() => proxy.close());
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'm-a' }] }));
  });
  t.teardown(() => upstream.close());
  const { server, discover } = await startGateway(t, upstream.url);
  await server.store.settings.save({ proxy_url: `http://gw:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}` });
  const { status, text, body } = await discover();
  t.equal(status, 502, text);
  t.equal(body.code, 'BAD_GATEWAY');
  t.equal(body.data.reason, 'discovery_failed');
  t.match(body.data.detail, /^the managed proxy could not be reached or refused/);
  t.notOk('upstream_status' in body.data, 'a proxy refusal is not an upstream status');
  t.ok(proxy.refused >= 1, 'the proxy did refuse the login');
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
  assertNoSecrets(t, text);
});

t.test('DISC through a managed proxy that is down: 502 discovery_failed naming the proxy, without its password', async (t) => {
  const upstream = await startUpstream((_req, res) => void res.end('{}'));
  t.teardown(() => upstream.close());
  const { server, discover } = await startGateway(t, upstream.url);
  await server.store.settings.save({ proxy_url: `http://gw:${PROXY_PASSWORD}@127.0.0.1:${await closedPort()}` });
  const { status, text, body } = await discover();
  t.equal(status, 502, text);
  t.equal(body.data.reason, 'discovery_failed');
  t.match(body.data.detail, /^the managed proxy could not be reached/);
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
  assertNoSecrets(t, text);
});

t.test('DISC on a Group with no base URL: 409 CONFLICT upstream_base_url_missing, not an upstream failure', async (t) => {
  const { discover } = await startGateway(t, null);
  const { status, text, body } = await discover();
  t.equal(status, 409, text);
  t.equal(body.code, 'CONFLICT');
  t.same(body.data, { reason: 'upstream_base_url_missing' });
  assertNoSecrets(t, text);
});

t.test('DISC with a credential that has no secret value: 409 CONFLICT credential_secret_missing', async (t) => {
  const upstream = await startUpstream((_req, res) => void res.end('{}'));
  t.teardown(() => upstream.close());
  const { discover } = await startGateway(t, upstream.url, { api_key: '' });
  const { status, text, body } = await discover();
  t.equal(status, 409, text);
  t.equal(body.code, 'CONFLICT');
  t.same(body.data, { reason: 'credential_secret_missing' });
  t.equal(upstream.requests.length, 0, 'no list call without a key');
});

t.test('DISC with a credential whose kind needs an authorization flow: 503 model_discovery_not_available, not an upstream failure', async (t) => {
  // ch10 lists models, but this provider lists with static keys only (docs/management-api.md).
  const upstream = await startUpstream((_req, res) => void res.end('{}'));
  t.teardown(() => upstream.close());
  const { discover } = await startGateway(t, upstream.url, { oauth_json: JSON.stringify({ access_token: UPSTREAM_KEY }) }, { channel: 'ch10', kind: 'oauth_json' });
  const { status, text, body } = await discover();
  t.equal(status, 503, text);
  t.equal(body.code, 'SERVICE_UNAVAILABLE');
  t.same(body.data, { reason: 'model_discovery_not_available', credential_kind: 'oauth_json' });
  t.equal(upstream.requests.length, 0);
  assertNoSecrets(t, text);
});

t.test('DISC without a credential_id lists with the first active credential of a kind it can list with, past those that need a flow', async (t) => {
  // ch16 takes a static key and a directory identity; this provider lists with the key only.
  const upstream = await startUpstream((_req, res) => void res.end(JSON.stringify({ object: 'list', data: [{ id: 'm-a' }] })));
  t.teardown(() => upstream.close());
  const directory = { endpoint: upstream.url, tenant_id: 'tenant', client_id: 'client', client_secret: 'directory-secret' };
  const { server, group, discover } = await startGateway(t, upstream.url, directory, { channel: 'ch16', kind: 'directory_identity' });
  const [keyed] = await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: UPSTREAM_KEY }, secretFields: ['api_key'] }]);
  if (!keyed || !('created' in keyed)) throw new Error('the key credential was not created');
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.match(body.data, { credential_id: keyed.created.id, models: [{ id: 'm-a', configured: true }] });
  t.equal(upstream.requests.length, 1);
  t.equal(upstream.requests[0]!.headers['api-key'], UPSTREAM_KEY);
  assertNoSecrets(t, text);
});
