import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { UpstreamClient } from '../../src/upstream/index.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { readAll, startLoopbackServer } from './helpers/loopback-server.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';

/** Certificates naming only one identity each (fixtures/tls-identity/README.md); loopback-cert.pem names both, so it cannot tell which was checked. */
const fixture = (name: string) => readFileSync(new URL(`fixtures/tls-identity/${name}.pem`, import.meta.url));
const CA = fixture('ca-cert');

async function upstreamWith(t: Test, name: 'ip-only' | 'localhost-only'): Promise<number> {
  const upstream = await startLoopbackServer((_req, res) => res.end('reached'), { tls: { cert: fixture(`${name}-cert`), key: fixture(`${name}-key`) } });
  t.teardown(() => upstream.close());
  return upstream.port;
}

async function reach(client: UpstreamClient, url: string, proxy: string | undefined): Promise<string> {
  const response = await client.request({ url, method: 'GET', headers: {}, body: null, ...(proxy === undefined ? {} : { proxy }) });
  return (await readAll(response.body)).toString();
}

const ROUTES = {
  socks5: async (t: Test) => {
    const socks = await startSocks5Server();
    t.teardown(() => socks.close());
    return socks.url;
  },
  'HTTP CONNECT': async (t: Test) => {
    const proxy = await startHttpConnectProxy();
    t.teardown(() => proxy.close());
    return proxy.url;
  },
  direct: async () => undefined,
};

for (const [route, start] of Object.entries(ROUTES)) {
  t.test(`${route}: an https upstream given by IP address is checked against that IP, not "localhost"`, async (t) => {
    const proxy = await start(t);
    const client = new UpstreamClient({ tls: { ca: CA } });
    t.teardown(() => client.destroy());
    const ipOnly = await upstreamWith(t, 'ip-only');
    const localhostOnly = await upstreamWith(t, 'localhost-only');

    await t.resolveMatch(reach(client, `https://127.0.0.1:${ipOnly}/`, proxy), 'reached', 'a certificate naming only IP:127.0.0.1 is accepted for 127.0.0.1');
    await t.rejects(reach(client, `https://127.0.0.1:${localhostOnly}/`, proxy), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'a certificate naming only DNS:localhost is refused for 127.0.0.1');
    await t.resolveMatch(reach(client, `https://localhost:${localhostOnly}/`, proxy), 'reached', 'and accepted for localhost');
  });
}
