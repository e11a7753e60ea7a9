import t, { type Test } from 'tap';
import { bothCredentialsActive } from './helpers/both-credentials-active.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { seedGroup, startGateway, type Gateway as ManagementGateway } from '../management/support/gateway.ts';
import type { CallResult } from '../management/support/http-client.ts';

const answer = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"x","choices":[]}');
};

// undici takes an HTTP proxy's URL as an origin: a path other than `/`, a query or a fragment
// makes it refuse the URL, so the management API refuses them for every scheme
// (management-api.md, Validation).
const EXTRA_PARTS = ['/some/path', '/?a=1', '/#frag'];
const REFUSED = ['http', 'https', 'socks5', 'socks5h'].flatMap((scheme) => EXTRA_PARTS.map((extra) => `${scheme}://127.0.0.1:3128${extra}`));

/** Each API place a proxy URL is set; `stored` reads back what that place holds afterwards. */
const PLACES: Array<{ name: string; set(gw: ManagementGateway, proxyUrl: string): Promise<{ res: CallResult; stored(): Promise<unknown> }> }> = [
  {
    name: 'global settings',
    async set(gw, proxyUrl) {
      const res = await gw.api('PUT', '/api/settings', { body: { proxy_url: proxyUrl } });
      return { res, stored: async () => (await gw.api('GET', '/api/settings')).json.data.proxy_url };
    },
  },
  {
    name: 'group settings',
    async set(gw, proxyUrl) {
      const id = await seedGroup(gw);
      const res = await gw.api('PUT', `/api/groups/${id}/settings`, { body: { proxy_url: proxyUrl } });
      return { res, stored: async () => (await gw.api('GET', `/api/groups/${id}/settings`)).json.data.proxy_url };
    },
  },
  {
    name: 'credential import',
    async set(gw, proxyUrl) {
      const id = await seedGroup(gw);
      const res = await gw.create(`/api/groups/${id}/credentials/import`, { credentials: 'sk-proxy-edges-000001', proxy_url: proxyUrl });
      return { res, stored: async () => (await gw.api('GET', `/api/groups/${id}/credentials`)).json.data[0]?.proxy_url ?? null };
    },
  },
  {
    name: 'credential update',
    async set(gw, proxyUrl) {
      const id = await seedGroup(gw);
      const imported = await gw.create(`/api/groups/${id}/credentials/import`, { credentials: 'sk-proxy-edges-000002' });
      if (imported.status !== 200 && imported.status !== 201) throw new Error(`import: ${imported.status} ${imported.text}`);
      const path = `/api/groups/${id}/credentials/${imported.json.data.created[0].id}`;
      const res = await gw.api('PATCH', path, { body: { proxy_url: proxyUrl } });
      return { res, stored: async () => (await gw.api('GET', path)).json.data.proxy_url };
    },
  },
];

t.test('a proxy URL with a path, query or fragment is refused wherever a proxy is set', async (t) => {
  const gw = await startGateway(t);
  for (const place of PLACES) {
    await t.test(place.name, async (t: Test) => {
      for (const url of REFUSED) {
        const { res, stored } = await place.set(gw, url);
        t.equal(res.status, 400, url);
        t.equal(res.json.code, 'VALIDATION_FAILED', url);
        t.match(res.json.data, { field: 'proxy_url', reason: 'proxy_path_not_allowed' }, url);
        t.equal(await stored(), null, `${url}: nothing stored`);
      }
      // A bare trailing slash is the root path, which undici accepts.
      const root = 'http://127.0.0.1:3128/';
      const { res, stored } = await place.set(gw, root);
      t.ok(res.status >= 200 && res.status < 300, `${root} accepted (${res.status} ${res.text})`);
      t.equal(await stored(), root);
    });
  }
});

t.test('a proxy URL refused for naming no host does not echo its login', async (t) => {
  const gw = await startGateway(t);
  for (const place of PLACES) {
    await t.test(place.name, async (t: Test) => {
      for (const url of ['socks5:user:pw-not-shown@127.0.0.1:1080', 'socks5h:/user:pw-not-shown@127.0.0.1:1080']) {
        const { res } = await place.set(gw, url);
        t.equal(res.status, 400, url);
        t.match(res.json.data, { field: 'proxy_url', reason: 'proxy_host_missing' }, url);
        t.notMatch(res.text, 'pw-not-shown', `${url}: the password is not in the answer`);
      }
    });
  }
});

// Written straight into the store (an older version, or the data file edited by hand): the
// management API never saw it, and the data plane must not blame the credentials for it.
for (const extra of EXTRA_PARTS) {
  t.test(`a stored HTTP proxy URL with ${extra} is 502 proxy_misconfigured, the credentials untouched`, async (t) => {
    const proxy = await startHttpConnectProxy();
    t.teardown(() => proxy.close());
    const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
    const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
    await gw.store.groups.update(group.id, { proxy_url: `${proxy.url}${extra}` });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
    const body = (await res.json()) as { error: { code: string } };
    t.equal(res.status, 502, 'a gateway error');
    t.equal(body.error.code, 'proxy_misconfigured');
    t.same(proxy.tunnels, [], 'nothing went through the proxy');
    t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
    await bothCredentialsActive(t, gw, group.id);
  });
}

// The management API's `uri` format refuses such a URL; one stored straight into the store cannot
// be percent-decoded into Basic credentials, which is the configuration's fault, not the credentials'.
t.test('a stored HTTP proxy URL whose user is not valid percent-encoding is 502 proxy_misconfigured, the credentials untouched', async (t) => {
  const proxy = await startHttpConnectProxy();
  t.teardown(() => proxy.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
  await gw.store.groups.update(group.id, { proxy_url: `http://bad%zzuser:pw@127.0.0.1:${proxy.port}` });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
  const body = (await res.json()) as { error: { code: string } };
  t.equal(res.status, 502);
  t.equal(body.error.code, 'proxy_misconfigured');
  t.same(proxy.tunnels, [], 'nothing went through the proxy');
  await bothCredentialsActive(t, gw, group.id);
});

// A user without a password authenticates as Basic base64("user:"), on HTTP routes as on WebSocket ones.
t.test('a chat completion goes through an HTTP proxy whose URL has a user and no password', async (t) => {
  const proxy = await startHttpConnectProxy({ username: 'only user', password: '' });
  t.teardown(() => proxy.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  await gw.store.groups.update(group.id, { proxy_url: `http://only%20user@127.0.0.1:${proxy.port}` });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  t.equal(proxy.refused, 0, 'the proxy accepted the credentials');
  t.same(proxy.tunnels, [new URL(upstream.url).host]);
  t.equal(upstream.requests.length, 1);
  t.notOk(upstream.requests[0]?.headers['proxy-authorization'], 'the proxy credentials stay with the proxy');
});

t.test('a SOCKS5 proxy URL with a user and no password logs in as that user with an empty password', async (t) => {
  // The proxy takes only that login (RFC 1929: user `onlyuser`, empty password).
  const proxy = await startSocks5Server({ username: 'onlyuser', password: '' });
  t.teardown(() => proxy.close());
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answer);
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  await gw.store.groups.update(group.id, { proxy_url: `socks5://onlyuser@127.0.0.1:${proxy.port}` });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
  await res.arrayBuffer();
  t.equal(res.status, 200, 'the login was taken and the request went through');
  t.same(proxy.destinations, [new URL(upstream.url).host], 'through the proxy');
  t.equal(upstream.requests.length, 1);
});
