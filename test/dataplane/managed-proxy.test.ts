import t, { type Test } from 'tap';
import { bothCredentialsActive } from './helpers/both-credentials-active.ts';
import { startBrokenProxy, type ProxyBreakage } from './helpers/broken-proxy.ts';
import { seedRoute, startDataPlane, startUpstream, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { closedPortUrl, waitForLog } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

const answer = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"x","choices":[]}');
};

async function callThrough(t: Test, scope: 'credential' | 'group' | 'global', proxyUrl: () => string) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  if (scope === 'group') await gw.store.groups.update(group.id, { proxy_url: proxyUrl() });
  if (scope === 'global') await gw.store.settings.save({ proxy_url: proxyUrl() });
  if (scope === 'credential') {
    const [cred] = await gw.store.credentials.list(group.id);
    await gw.store.credentials.update(group.id, cred!.id, { proxy_url: proxyUrl() });
  }
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
  t.equal(res.status, 200);
  t.equal(upstream.requests.length, 1);
  return new URL(upstream.url).host;
}

for (const scope of ['credential', 'group', 'global'] as const) {
  t.test(`a ${scope}-scope HTTP proxy carries the upstream connection`, async (t) => {
    const proxy = await startHttpConnectProxy();
    t.teardown(() => proxy.close());
    const host = await callThrough(t, scope, () => proxy.url);
    t.same(proxy.tunnels, [host]);
  });
}

t.test('a SOCKS5 proxy carries the upstream connection', async (t) => {
  const socks = await startSocks5Server();
  t.teardown(() => socks.close());
  const host = await callThrough(t, 'group', () => socks.url);
  t.same(socks.destinations, [host]);
});

t.test('a SOCKS5 proxy at credential scope carries the upstream connection', async (t) => {
  const socks = await startSocks5Server();
  t.teardown(() => socks.close());
  const host = await callThrough(t, 'credential', () => socks.url);
  t.same(socks.destinations, [host]);
});

t.test('the credential\'s proxy wins over the Group\'s, which wins over the global one (note 13)', async (t) => {
  const proxies = { credential: await startHttpConnectProxy(), group: await startHttpConnectProxy(), global: await startHttpConnectProxy() };
  t.teardown(() => Promise.all(Object.values(proxies).map((p) => p.close())));
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  const [cred] = await gw.store.credentials.list(group.id);
  await gw.store.settings.save({ proxy_url: proxies.global.url });
  await gw.store.groups.update(group.id, { proxy_url: proxies.group.url });
  await gw.store.credentials.update(group.id, cred!.id, { proxy_url: proxies.credential.url });
  const host = new URL(upstream.url).host;
  const tunnels = () => ({ credential: proxies.credential.tunnels.length, group: proxies.group.tunnels.length, global: proxies.global.tunnels.length });
  const call = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
    t.equal(res.status, 200);
    await res.arrayBuffer();
  };

  await call();
  t.same(tunnels(), { credential: 1, group: 0, global: 0 }, 'all three set: the credential\'s');
  t.same(proxies.credential.tunnels, [host]);

  await gw.store.credentials.update(group.id, cred!.id, { proxy_url: null });
  await call();
  t.same(tunnels(), { credential: 1, group: 1, global: 0 }, 'no credential proxy: the Group\'s');
  t.same(proxies.group.tunnels, [host]);

  await gw.store.groups.update(group.id, { proxy_url: null });
  await call();
  t.same(tunnels(), { credential: 1, group: 1, global: 1 }, 'neither: the global one');
  t.same(proxies.global.tunnels, [host]);
  t.equal(upstream.requests.length, 3);
});

// A proxy URL stored by an older version or by editing the data file is not checked by the
// management API; the data plane must not blame the credentials for it.
for (const scope of ['credential', 'group', 'global'] as const) {
  t.test(`an unusable ${scope}-scope proxy URL already stored is a gateway error, not a credential's fault`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
    const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
    const stored = 'ftp://proxy.test:21';
    if (scope === 'group') await gw.store.groups.update(group.id, { proxy_url: stored });
    if (scope === 'global') await gw.store.settings.save({ proxy_url: stored });
    if (scope === 'credential') {
      for (const c of await gw.store.credentials.list(group.id)) await gw.store.credentials.update(group.id, c.id, { proxy_url: stored });
    }
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
    const body = (await res.json()) as { error: { code: string } };
    t.equal(res.status, 502, 'a gateway error');
    t.equal(body.error.code, 'proxy_misconfigured');
    t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
    await bothCredentialsActive(t, gw, group.id);
  });
}

// A managed proxy that is down or refuses the gateway's login is the gateway's side failing: a
// Group or global proxy sits in front of every credential, and cooling them all down would
// keep the route shut (503) after the proxy is fixed.
// `connections`: what the broken proxy accepted, so a gateway reconnecting without end shows.
type BrokenProxy = { label: string; broken: () => Promise<{ url: string; fixed: string; connections?: () => number; close(): Promise<void> }> };

/** A proxy broken in `breakage`, and a working HTTP proxy to fix the route with. */
async function brokenThenFixed(breakage: ProxyBreakage, scheme?: 'socks5') {
  const [proxy, working] = await Promise.all([startBrokenProxy(breakage), startHttpConnectProxy()]);
  return {
    url: scheme === undefined ? proxy.url : proxy.url.replace(/^http:/, `${scheme}:`),
    fixed: working.url,
    connections: proxy.connections,
    close: async () => {
      await Promise.all([proxy.close(), working.close()]);
    },
  };
}

const BROKEN_PROXIES: BrokenProxy[] = [
  {
    label: 'an HTTP proxy on a closed port',
    broken: async () => {
      const working = await startHttpConnectProxy();
      return { url: await closedPortUrl(), fixed: working.url, close: () => working.close() };
    },
  },
  {
    label: 'a SOCKS5 proxy on a closed port',
    broken: async () => {
      const working = await startSocks5Server();
      return { url: (await closedPortUrl()).replace(/^http:/, 'socks5:'), fixed: working.url, close: () => working.close() };
    },
  },
  {
    label: 'an HTTP CONNECT proxy refusing a wrong password (407)',
    broken: async () => {
      const proxy = await startHttpConnectProxy({ username: 'puser', password: 'right' });
      return { url: proxy.url.replace(':right@', ':wrong@'), fixed: proxy.url, close: () => proxy.close() };
    },
  },
  // undici's ProxyAgent retried a CONNECT whose connection closed without end (nodejs/undici#3897).
  { label: 'an HTTP proxy that accepts the connection and closes it', broken: () => brokenThenFixed('accept-then-close') },
  { label: 'an HTTP proxy that closes the connection after reading the CONNECT', broken: () => brokenThenFixed('close-after-reading') },
  { label: 'an HTTP proxy that resets the connection', broken: () => brokenThenFixed('reset') },
  { label: 'an HTTP proxy answering garbage bytes', broken: () => brokenThenFixed('garbage') },
  { label: 'an HTTPS proxy with an untrusted certificate', broken: () => brokenThenFixed('untrusted-tls') },
  { label: 'a SOCKS5 proxy that accepts the connection and closes it', broken: () => brokenThenFixed('accept-then-close', 'socks5') },
  { label: 'a SOCKS5 proxy answering garbage bytes', broken: () => brokenThenFixed('garbage', 'socks5') },
];

async function setProxy(gw: Gateway, scope: 'group' | 'global', groupId: number, url: string) {
  if (scope === 'group') await gw.store.groups.update(groupId, { proxy_url: url });
  else await gw.store.settings.save({ proxy_url: url });
}

const complete = (gw: Gateway, keyValue: string) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });

for (const scope of ['group', 'global'] as const) {
  for (const { label, broken } of BROKEN_PROXIES) {
    t.test(`${label} at ${scope} scope: 502 proxy_unreachable, no credential cooled down, fixed at once`, async (t) => {
      const proxy = await broken();
      t.teardown(() => proxy.close());
      const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
      const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
      await setProxy(gw, scope, group.id, proxy.url);

      const res = await complete(gw, keyValue);
      t.equal(res.status, 502);
      t.match(await res.json(), { error: { code: 'proxy_unreachable' } });
      t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
      await bothCredentialsActive(t, gw, group.id);
      t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), {
        status: 502,
        error_code: 'proxy_unreachable',
        // The other credential is behind the same proxy: not tried, it would fail the same way.
        attempt_count: 1,
        attempts: [{ error_code: 'proxy_unreachable' }],
      });
      await gw.logs.flush();
      t.equal((await gw.logs.list({}, { limit: 10 })).items.length, 1, 'one log record');
      if (proxy.connections !== undefined) t.ok(proxy.connections() <= 2, `the proxy saw the one attempt, not a loop (${proxy.connections()})`);

      await setProxy(gw, scope, group.id, proxy.fixed);
      const again = await complete(gw, keyValue);
      t.equal(again.status, 200, 'the very next request after the fix goes through');
      await again.arrayBuffer();
      t.equal(upstream.requests.length, 1);
    });
  }
}

// The proxy answered for the upstream it could not reach: that is the upstream's failure, as without a proxy.
for (const kind of ['http', 'socks5'] as const) {
  t.test(`a ${kind} proxy that cannot reach the upstream still cools the credential down`, async (t) => {
    const proxy = kind === 'http' ? await startHttpConnectProxy() : await startSocks5Server();
    t.teardown(() => proxy.close());
    const gw = await startDataPlane();
    t.teardown(() => gw.close());
    const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
    await gw.store.groups.update(group.id, { proxy_url: proxy.url });

    const res = await complete(gw, keyValue);
    t.equal(res.status, 502);
    t.match(await res.json(), { error: { code: 'upstream_unreachable' } });
    const [credential] = await gw.store.credentials.list(group.id);
    t.equal(credential!.state, 'cooldown');
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { attempts: [{ error_code: 'upstream_connect_failed' }] });
  });
}

// CONNECT answered "granted" with address type 9, none of RFC 1928's: the socks package took it for a tunnel opened.
const UNKNOWN_ADDRESS_TYPE_REPLY = Buffer.from([5, 0, 0, 9, 1, 2, 3, 4, 0, 80]);

t.test('a SOCKS5 reply with an unknown address type: 502 proxy_unreachable, no credential cooled down, nothing sent into the tunnel', async (t) => {
  const socks = await startSocks5Server({ username: 'u', password: 'p' }, { reply: UNKNOWN_ADDRESS_TYPE_REPLY });
  t.teardown(() => socks.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
  await setProxy(gw, 'group', group.id, socks.url);

  const res = await complete(gw, keyValue);
  t.equal(res.status, 502);
  t.match(await res.json(), { error: { message: String, type: String, code: 'proxy_unreachable', param: null } }, 'in the completions error shape');
  t.equal(socks.destinations.length, 1, 'the proxy tried once: the other credential is behind it too');
  t.equal(socks.bytesAfterReply(), 0, 'nothing sent into the tunnel');
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
  await bothCredentialsActive(t, gw, group.id);
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), {
    status: 502,
    error_code: 'proxy_unreachable',
    attempt_count: 1,
    attempts: [{ error_code: 'proxy_unreachable' }],
  });
});

t.test('a realtime session through a SOCKS5 proxy replying with an unknown address type: 502 proxy_unreachable, nothing sent into the tunnel', async (t) => {
  const upstream = await startWsUpstream();
  const socks = await startSocks5Server(undefined, { reply: UNKNOWN_ADDRESS_TYPE_REPLY });
  t.teardown(async () => {
    await socks.close();
    await upstream.close();
  });
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  await gw.store.groups.update(group.id, { proxy_url: socks.url });

  const res = await upgradeAnswer(wsUrl, { openedAs101: true });
  t.not(res, 101, 'not upgraded');
  if (res === 101) return;
  t.equal(res.status, 502);
  t.match(JSON.parse(res.body), { error: { code: 'proxy_unreachable' } });
  t.ok(socks.destinations.length >= 1, 'the proxy was asked');
  t.equal(socks.bytesAfterReply(), 0, 'no handshake sent into the tunnel');
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  await bothCredentialsActive(t, gw, group.id);
});

t.test('a Group whose proxy is down is passed over for the next Group, and its credential is not cooled down', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const first = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-behind-proxy'], priority: 10 });
  const second = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-direct'], priority: 1 });
  await setProxy(gw, 'group', first.group.id, await closedPortUrl());
  const res = await complete(gw, second.keyValue);
  t.equal(res.status, 200, 'served by the Group without a proxy');
  t.equal(upstream.requests.length, 1);
  t.equal(upstream.requests[0]!.headers.authorization, 'Bearer sk-direct');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, group_id: String(second.group.id), attempts: [{ error_code: 'proxy_unreachable' }, { status: 200 }] });
  t.match(await gw.store.credentials.list(first.group.id), [{ state: 'active', cooldown_until: null }], 'the credential behind the dead proxy is untouched');
});

t.test('a Group proxy that is down is tried once, not once per credential: a Group of three still gives way to the next Group', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const first = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-behind-1', 'sk-behind-2', 'sk-behind-3'], priority: 10 });
  const second = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-direct'], priority: 1 });
  await setProxy(gw, 'group', first.group.id, await closedPortUrl());
  // max_attempts_per_request is 3: the Group's other two credentials sit behind the same proxy.
  const res = await complete(gw, second.keyValue);
  t.equal(res.status, 200, 'served by the next Group');
  t.same(upstream.requests.map((r) => r.headers.authorization), ['Bearer sk-direct']);
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, group_id: String(second.group.id), attempt_count: 2, attempts: [{ group_id: String(first.group.id), error_code: 'proxy_unreachable' }, { status: 200 }] });
});

t.test('a realtime session: a Group proxy that is down is tried once, and the next Group opens the session', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, group } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-behind-1', 'sk-behind-2', 'sk-behind-3'] });
  await gw.store.groups.update(group.id, { priority: 10, proxy_url: await closedPortUrl() });
  const second = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], upstreamKeys: ['sk-direct'], priority: 1 });
  const res = await upgradeAnswer(`${gw.url.replace('http', 'ws')}/v1/audio/transcriptions/realtime?model=voice&key=${second.keyValue}`, { openedAs101: true });
  t.equal(res, 101, 'the session opens through the next Group');
  t.same(upstream.seen.map((r) => r.headers.authorization), ['Bearer sk-direct']);
});

t.test("the Group's address refusing a direct connection: its credential behind a proxy of its own is still tried there (another way to it)", async (t) => {
  const proxy = await startHttpConnectProxy();
  t.teardown(() => proxy.close());
  const { gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-direct', 'sk-proxied'] });
  const [, proxied] = await gw.store.credentials.list(group.id);
  await gw.store.credentials.update(group.id, proxied!.id, { proxy_url: proxy.url });
  const res = await complete(gw, keyValue);
  t.equal(res.status, 502);
  // The proxy reaches the closed port no better (its 502 to the CONNECT): each way to the address failed once.
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { attempt_count: 2, attempts: [{ error_code: 'upstream_connect_failed' }, { error_code: 'upstream_connect_failed' }] });
  t.equal(proxy.tunnels.length, 1, 'the credential behind its own proxy was tried');
});

t.test('a global proxy that is down passes over the credentials behind it in the other Groups too; a Group behind a working proxy of its own is tried', async (t) => {
  const working = await startHttpConnectProxy();
  t.teardown(() => working.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const route = (upstreamKeys: string[], priority: number) => seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys, priority });
  const first = await route(['sk-global-1'], 10);
  const second = await route(['sk-global-2'], 5);
  const own = await route(['sk-own-proxy'], 1);
  await gw.store.groups.update(own.group.id, { proxy_url: working.url });
  await setProxy(gw, 'global', first.group.id, await closedPortUrl());
  const res = await complete(gw, own.keyValue);
  t.equal(res.status, 200, 'served through the working proxy');
  t.same(upstream.requests.map((r) => r.headers.authorization), ['Bearer sk-own-proxy']);
  t.equal(working.tunnels.length, 1);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(
    record.attempts.map((a) => [a.group_id, a.error_code]),
    [
      [String(first.group.id), 'proxy_unreachable'],
      [String(own.group.id), null],
    ],
    `the second Group (${second.group.id}), behind the same global proxy, is passed over`,
  );
});

t.test("a stored secret no header can carry says nothing of its proxy: the next credential behind the same proxy is tried", async (t) => {
  const proxy = await startHttpConnectProxy();
  t.teardown(() => proxy.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  // Written straight into the store, as a secret stored before the management API refused it.
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-stored…0001', 'sk-good-0002'] });
  await setProxy(gw, 'group', group.id, proxy.url);
  // The round-robin starts each request at another credential: one of the two starts at the unsendable secret.
  const codes: (string | null)[][] = [];
  for (let i = 0; i < 2; i++) {
    const res = await complete(gw, keyValue);
    t.equal(res.status, 200, `request ${i + 1} is served by the good credential`);
    codes.push((await waitForLog(gw, res.headers.get('x-switchyard-request-id'))).attempts.map((a) => a.error_code));
  }
  t.same(codes.sort((a, b) => b.length - a.length), [['credential_unusable', null], [null]]);
  t.same(upstream.requests.map((r) => r.headers.authorization), ['Bearer sk-good-0002', 'Bearer sk-good-0002']);
});

for (const breakage of ['accept-then-close', 'garbage', 'untrusted-tls'] as const) {
  t.test(`a credential's proxy broken (${breakage}) gives way to the next credential, which is not cooled down either`, async (t) => {
    const proxy = await startBrokenProxy(breakage);
    t.teardown(() => proxy.close());
    const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
    const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
    const [first] = await gw.store.credentials.list(group.id);
    await gw.store.credentials.update(group.id, first!.id, { proxy_url: proxy.url });

    const res = await complete(gw, keyValue);
    t.equal(res.status, 200, 'served by the credential without the proxy');
    await res.arrayBuffer();
    t.same(upstream.requests.map((r) => r.headers.authorization), ['Bearer sk-upstream-2']);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, attempts: [{ credential_id: String(first!.id), error_code: 'proxy_unreachable' }, { status: 200 }] });
    await bothCredentialsActive(t, gw, group.id);
    t.ok(proxy.connections() <= 2, `the proxy saw the one attempt, not a loop (${proxy.connections()})`);
  });
}

t.test('model discovery through an HTTP proxy that accepts the connection and closes it: 502 discovery_failed naming the proxy', async (t) => {
  const AUTH_KEY = 'managed-proxy-discovery-auth-key-0123456789';
  const proxy = await startBrokenProxy('accept-then-close');
  t.teardown(() => proxy.close());
  const upstream = await startUpstream(answer);
  t.teardown(() => upstream.close());
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const group = await server.store.groups.create({ name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-upstream-1' }, secretFields: ['api_key'] }]);
  await server.store.groups.update(group.id, { proxy_url: proxy.url });

  const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
  t.equal(res.status, 502);
  t.match(await res.json(), { code: 'BAD_GATEWAY', data: { reason: 'discovery_failed', detail: /^the managed proxy could not be reached/ } });
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
  t.ok(proxy.connections() <= 2, `the proxy saw the one attempt, not a loop (${proxy.connections()})`);
});
