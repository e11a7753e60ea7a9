import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { WebSocketServer } from 'ws';
import { deferred, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { realtimeRoute, upgradeAnswer } from './helpers/ws-upstream.ts';

// A WebSocket handshake after another's takes the global proxy as the settings hold it then, as
// an HTTP attempt does: a proxy_url saved while the first handshake waits carries the next one.

/** A WebSocket upstream whose first handshake waits for `release` and is then refused 429; later ones open. */
async function heldWsUpstream() {
  const arrived = deferred();
  const release = deferred();
  const seen: IncomingMessage[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', async (req, socket, head) => {
    seen.push(req);
    if (seen.length > 1) return wss.handleUpgrade(req, socket, head, () => undefined);
    arrived.resolve();
    await release.promise;
    socket.end('HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    arrived,
    release,
    close: async () => {
      release.resolve();
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

t.test('the global proxy changed while the first handshake waits: the next credential goes through the new proxy', async (t) => {
  const upstream = await heldWsUpstream();
  const before = await startHttpConnectProxy();
  const after = await startHttpConnectProxy();
  t.teardown(() => Promise.all([upstream.close(), before.close(), after.close()]));
  const { gw, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  await gw.store.settings.save({ proxy_url: before.url });

  const answer = upgradeAnswer(wsUrl, { openedAs101: true });
  await withTimeout(upstream.arrived.promise, 5000, 'the first handshake at the upstream');
  await gw.store.settings.save({ proxy_url: after.url });
  upstream.release.resolve();
  t.equal(await withTimeout(answer, 5000, 'the session'), 101, 'the next credential opened the session');
  t.same(upstream.seen.map((r) => r.headers.authorization), ['Bearer sk-upstream-a', 'Bearer sk-upstream-b']);
  const host = new URL(upstream.url).host;
  t.same(before.tunnels, [host], 'the first handshake went through the proxy set when it was sent');
  t.same(after.tunnels, [host], 'the next went through the proxy set since');
});
