import t from 'tap';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { socksConnector } from '../../src/upstream/index.ts';
import { bothCredentialsActive } from './helpers/both-credentials-active.ts';
import { seedRoute, startDataPlane, startUpstream, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

// SOCKS5 sends the user, the password (RFC 1929) and the destination name (RFC 1928) each with a
// one-byte length. The socks package writes those lengths from a socket 'data' handler, so one
// over 255 bytes threw a RangeError no promise caught and ended the gateway. A proxy URL stored
// by hand (the management API refuses it) fails the attempt as the gateway's configuration.

const answer = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"x","choices":[]}');
};

const complete = (gw: Gateway, keyValue: string) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });

/** A SOCKS5 server that picks user/password login and counts connections; it never gets further than the login. */
async function startLoginProxy(): Promise<{ url(userinfo: string): string; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    client.once('data', () => client.write(Buffer.from([5, 2])));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: (userinfo) => `socks5://${userinfo}@127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const LOGINS = [
  { label: 'a 320-byte password', userinfo: `u:${'p'.repeat(320)}` },
  { label: 'a 256-byte user', userinfo: `${'u'.repeat(256)}:pw` },
  // 100 characters, 300 bytes as UTF-8.
  { label: 'a 100-character multibyte password', userinfo: `u:${encodeURIComponent('€'.repeat(100))}` },
];

for (const scope of ['credential', 'group', 'global'] as const) {
  for (const { label, userinfo } of LOGINS) {
    t.test(`a stored ${scope}-scope SOCKS5 proxy with ${label}: 502 proxy_misconfigured, and the gateway keeps answering`, async (t) => {
      const proxy = await startLoginProxy();
      t.teardown(() => proxy.close());
      const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
      const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
      const stored = proxy.url(userinfo);
      if (scope === 'group') await gw.store.groups.update(group.id, { proxy_url: stored });
      if (scope === 'global') await gw.store.settings.save({ proxy_url: stored });
      if (scope === 'credential') {
        for (const c of await gw.store.credentials.list(group.id)) await gw.store.credentials.update(group.id, c.id, { proxy_url: stored });
      }

      for (const attempt of ['first', 'second']) {
        const res = await complete(gw, keyValue);
        t.equal(res.status, 502, `${attempt} request answered`);
        t.match(await res.json(), { error: { code: 'proxy_misconfigured' } }, attempt);
      }
      t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
      t.equal(proxy.connections(), 0, 'the proxy was never asked');
      await bothCredentialsActive(t, gw, group.id);
    });
  }
}

t.test('model discovery through a stored SOCKS5 proxy with an over-long password: 502 naming the proxy URL, and the gateway keeps answering', async (t) => {
  const AUTH_KEY = 'socks-lengths-discovery-auth-key-0123456789';
  const proxy = await startLoginProxy();
  t.teardown(() => proxy.close());
  const upstream = await startUpstream(answer);
  t.teardown(() => upstream.close());
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const group = await server.store.groups.create({ name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-upstream-1' }, secretFields: ['api_key'] }]);
  await server.store.groups.update(group.id, { proxy_url: proxy.url(`u:${'p'.repeat(320)}`) });

  for (const attempt of ['first', 'second']) {
    const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
    t.equal(res.status, 502, `${attempt} discovery answered`);
    t.match(await res.json(), { code: 'BAD_GATEWAY', data: { reason: 'discovery_failed', detail: /^the managed proxy URL cannot be used/ } }, attempt);
  }
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
  t.equal(proxy.connections(), 0, 'the proxy was never asked');
});

t.test('a realtime session through a stored SOCKS5 proxy with an over-long password: 502 proxy_misconfigured, and the gateway keeps answering', async (t) => {
  const upstream = await startWsUpstream();
  const proxy = await startLoginProxy();
  t.teardown(async () => {
    await proxy.close();
    await upstream.close();
  });
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  await gw.store.groups.update(group.id, { proxy_url: proxy.url(`u:${'p'.repeat(320)}`) });

  for (const attempt of ['first', 'second']) {
    const res = await upgradeAnswer(wsUrl, { openedAs101: true });
    t.not(res, 101, `${attempt}: not upgraded`);
    if (res === 101) return;
    t.equal(res.status, 502, attempt);
    t.match(JSON.parse(res.body), { error: { code: 'proxy_misconfigured' } }, attempt);
  }
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  t.equal(proxy.connections(), 0, 'the proxy was never asked');
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

/** The connector's own answer for `target`, through `proxyUrl`. */
function connectThrough(proxyUrl: string, target: { hostname: string; port: string }): Promise<Error | null> {
  const connector = socksConnector(new URL(proxyUrl), { connectTimeoutMs: 5_000 });
  return new Promise((resolve) => {
    connector({ protocol: 'http:', ...target }, (error, socket) => {
      socket?.destroy();
      resolve(error);
    });
  });
}

t.test('an upstream host name over 255 bytes fails through a SOCKS5 proxy as it does without one, the proxy not asked', async (t) => {
  const longHost = `${Array.from({ length: 5 }, (_, i) => String.fromCharCode(97 + i).repeat(60)).join('.')}.test`;
  const socks = await startSocks5Server();
  t.teardown(() => socks.close());
  // A gateway each, as the direct attempt cools its credential down.
  const answerFor = async (proxyUrl?: string) => {
    const gw = await startDataPlane();
    t.teardown(() => gw.close());
    const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: `http://${longHost}`, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
    if (proxyUrl !== undefined) await gw.store.groups.update(group.id, { proxy_url: proxyUrl });
    const res = await complete(gw, keyValue);
    return { status: res.status, body: (await res.json()) as { error: { code: string } } };
  };
  const withoutProxy = await answerFor();
  const viaProxy = await answerFor(socks.url);
  t.equal(viaProxy.status, withoutProxy.status, `the same status (${withoutProxy.status})`);
  t.equal(viaProxy.body.error.code, withoutProxy.body.error.code, `the same code (${withoutProxy.body.error.code}), not the proxy's`);
  t.same(socks.destinations, [], 'the proxy was never asked');

  const error = await connectThrough(socks.url, { hostname: longHost, port: '80' });
  t.match(error, { code: 'EINVAL', message: /over 255 bytes/ }, 'the connector fails it through its callback');
});
