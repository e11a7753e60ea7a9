import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';

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
