import t, { type Test } from 'tap';
import { UpstreamClient, classifyUpstreamError, createProxyDispatcher, proxyUrlProblem } from '../../src/upstream/index.ts';
import { loopbackCert, readAll, startLoopbackServer } from './helpers/loopback-server.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';

async function echoServer(t: Test, tls = false) {
  const server = await startLoopbackServer(
    async (req, res) => {
      const body = await readAll(req);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${req.method} ${req.url}\n\n`);
      res.end(`data: ${body.toString()}\n\n`);
    },
    { tls },
  );
  t.teardown(() => server.close());
  return server;
}

t.test('SOCKS5: traffic goes through the proxy, connections are reused', async (t) => {
  const upstream = await echoServer(t);
  const socks = await startSocks5Server();
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await socks.close();
  });
  for (let i = 0; i < 3; i++) {
    const response = await client.request({ url: `${upstream.url}/v1/x?i=${i}`, method: 'POST', headers: {}, body: `hello ${i}`, proxy: socks.url });
    t.equal(response.status, 200);
    t.equal((await readAll(response.body)).toString(), `data: POST /v1/x?i=${i}\n\ndata: hello ${i}\n\n`);
  }
  t.ok(socks.destinations.length >= 1 && socks.destinations.length <= 2, 'keep-alive through the tunnel');
  t.ok(socks.destinations.every((d) => d === `127.0.0.1:${upstream.port}`), 'the proxy was asked for the upstream');
  t.equal(upstream.connections(), socks.destinations.length, 'every upstream connection came through the proxy');
});

t.test('SOCKS5 with user/password, and https upstream over the tunnel', async (t) => {
  const upstream = await echoServer(t, true);
  const socks = await startSocks5Server({ username: 'proxy user', password: 'p@ss:word' });
  const client = new UpstreamClient({ tls: { ca: loopbackCert.cert } });
  t.teardown(async () => {
    await client.destroy();
    await socks.close();
  });
  const response = await client.request({ url: `${upstream.url}/secure`, method: 'POST', headers: {}, body: 'tls', proxy: socks.url });
  t.equal((await readAll(response.body)).toString(), 'data: POST /secure\n\ndata: tls\n\n');
  t.same(socks.destinations, [`127.0.0.1:${upstream.port}`]);
});

t.test('SOCKS5 with wrong credentials fails to connect, nothing reaches the upstream', async (t) => {
  const upstream = await echoServer(t);
  const socks = await startSocks5Server({ username: 'u', password: 'right' });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await socks.close();
  });
  const proxy = socks.url.replace('right', 'wrong');
  const error = await client.request({ url: `${upstream.url}/`, method: 'GET', headers: {}, proxy }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.same(classifyUpstreamError(error), { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' });
  t.equal(upstream.connections(), 0);
});

t.test('HTTP proxy: CONNECT tunnel with Basic credentials', async (t) => {
  const upstream = await echoServer(t);
  const proxy = await startHttpConnectProxy({ username: 'alice', password: 's3cret' });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await proxy.close();
  });
  const response = await client.request({ url: `${upstream.url}/v1/messages`, method: 'POST', headers: {}, body: 'via http proxy', proxy: proxy.url });
  t.equal((await readAll(response.body)).toString(), 'data: POST /v1/messages\n\ndata: via http proxy\n\n');
  t.same(proxy.tunnels, [`127.0.0.1:${upstream.port}`]);
  t.equal(proxy.refused, 0);
});

t.test('HTTP proxy: https upstream through the tunnel', async (t) => {
  const upstream = await echoServer(t, true);
  const proxy = await startHttpConnectProxy();
  const client = new UpstreamClient({ tls: { ca: loopbackCert.cert } });
  t.teardown(async () => {
    await client.destroy();
    await proxy.close();
  });
  const response = await client.request({ url: `${upstream.url}/s`, method: 'POST', headers: {}, body: 'x', proxy: proxy.url });
  t.equal((await readAll(response.body)).toString(), 'data: POST /s\n\ndata: x\n\n');
  t.same(proxy.tunnels, [`127.0.0.1:${upstream.port}`]);
});

t.test('HTTP proxy refusing credentials is a connect failure', async (t) => {
  const upstream = await echoServer(t);
  const proxy = await startHttpConnectProxy({ username: 'alice', password: 's3cret' });
  const client = new UpstreamClient();
  t.teardown(async () => {
    await client.destroy();
    await proxy.close();
  });
  const error = await client
    .request({ url: `${upstream.url}/`, method: 'GET', headers: {}, proxy: proxy.url.replace('s3cret', 'nope') })
    .then(() => undefined, (e: unknown) => e);
  t.same(classifyUpstreamError(error), { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' });
  t.equal(proxy.refused, 1);
  t.equal(upstream.connections(), 0);
});

t.test('one dispatcher per proxy URL and per direct origin', async (t) => {
  const client = new UpstreamClient();
  t.teardown(() => client.destroy());
  const a = client.dispatcherFor('http://127.0.0.1:1', 'socks5://127.0.0.1:1080');
  t.equal(client.dispatcherFor('http://127.0.0.1:2', 'socks5://127.0.0.1:1080'), a, 'same proxy, any origin');
  t.not(client.dispatcherFor('http://127.0.0.1:1', 'http://127.0.0.1:3128'), a);
  const direct = client.dispatcherFor('http://127.0.0.1:1');
  t.equal(client.dispatcherFor('http://127.0.0.1:1'), direct);
  t.not(client.dispatcherFor('http://127.0.0.1:2'), direct);
});

t.test('unsupported or malformed proxy URLs are refused without echoing secrets', async (t) => {
  const options = { connectTimeoutMs: 1000, headersTimeoutMs: 1000, bodyIdleTimeoutMs: 1000, keepAliveTimeoutMs: 1000, connections: 1, tls: undefined };
  t.throws(() => createProxyDispatcher('ftp://u:pw@host:21', options), /unsupported proxy scheme ftp:/);
  const error = (() => {
    try {
      createProxyDispatcher('::not a url:secretpw', options);
    } catch (e) {
      return e as Error;
    }
    return undefined;
  })();
  t.match(error?.message, /invalid proxy URL/);
  t.notMatch(error?.message, /secretpw/);
});

t.test('an unusable proxy URL is the gateway\'s configuration failing, not the upstream: proxy_misconfigured, nothing sent', async (t) => {
  const upstream = await echoServer(t);
  const client = new UpstreamClient();
  t.teardown(() => client.destroy());
  for (const proxy of ['ftp://proxy.test:21', 'socks4://proxy.test:1080', 'socks5://', 'http://proxy.test:0', '::not a url']) {
    const error = await client.request({ url: `${upstream.url}/`, method: 'GET', headers: {}, proxy }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.same(classifyUpstreamError(error), { kind: 'proxy_misconfigured', notDelivered: true, code: 'proxy_misconfigured' }, proxy);
    t.ok(proxyUrlProblem(proxy), `${proxy}: the configuration-time check refuses it too`);
  }
  t.equal(upstream.connections(), 0);
  for (const proxy of ['http://proxy.test:3128', 'https://proxy.test', 'socks5://proxy.test', 'socks5h://u:p@proxy.test:1080']) {
    t.equal(proxyUrlProblem(proxy), undefined, `${proxy} is usable`);
  }
});
