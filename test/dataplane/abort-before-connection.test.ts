import t from 'tap';
import { UpstreamClient, classifyUpstreamError } from '../../src/upstream/index.ts';
import { startBrokenProxy } from './helpers/broken-proxy.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { eventually, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// undici hands an exchange its controller only once the request has a connection: through a
// managed proxy, once the proxy answered CONNECT; directly, once TCP and TLS are up. An abort
// asked for before then must still end the exchange at once, not when the connection is made
// or its connect timeout (10 s by default) runs out.

const LONG_CONNECT_TIMEOUT_MS = 600_000;

for (const via of ['an HTTP proxy that never answers CONNECT', 'an https upstream that never finishes the TLS handshake'] as const) {
  t.test(`exchange: an abort while ${via} holds the connection rejects the reply at once, as aborted`, async (t) => {
    const silent = await startBrokenProxy('silent');
    const client = new UpstreamClient({ connectTimeoutMs: LONG_CONNECT_TIMEOUT_MS });
    t.teardown(async () => {
      await client.destroy();
      await silent.close();
    });
    const throughProxy = via.startsWith('an HTTP proxy');
    const exchange = client.exchange({
      url: throughProxy ? 'http://upstream.test/v1/chat/completions' : `${silent.url.replace(/^http:/, 'https:')}/v1/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      ...(throughProxy ? { proxy: silent.url } : {}),
    });
    await eventually(() => (silent.connections() > 0 ? true : undefined), 'the connection');
    exchange.abort();
    const error = await withTimeout(
      exchange.reply.then(() => undefined, (e: unknown) => e),
      5000,
      'the aborted exchange settles',
    );
    t.equal(classifyUpstreamError(error, { viaProxy: throughProxy }).kind, 'aborted');
  });
}

t.test('a client that leaves while the Group\'s proxy holds the CONNECT gets its record at once: client_closed, no cooldown', async (t) => {
  const silent = await startBrokenProxy('silent');
  t.teardown(() => silent.close());
  // A connect timeout the test never reaches: the record can only come from the client's leaving.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.end('{}'), { upstreamOptions: { connectTimeoutMs: LONG_CONNECT_TIMEOUT_MS } });
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-1', 'sk-upstream-2'] });
  await gw.store.groups.update(group.id, { proxy_url: silent.url });

  const client = new AbortController();
  const pending = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: client.signal, headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'm', messages: [] }) });
  const sent = pending.then(() => undefined, () => undefined);
  await eventually(() => (silent.connections() > 0 ? true : undefined), 'the CONNECT');
  client.abort();
  await sent;
  // The request id comes back only with an answer, which the client never got: the one record of the gateway is it.
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({}, { limit: 10 })).items[0];
  }, 'the record, while the proxy still holds the CONNECT');
  t.match(await waitForLog(gw, record.request_id), { status: 499, error_code: 'client_closed', attempts: [{ error_code: 'client_closed' }] });
  t.equal(record.attempts.length, 1, 'no other credential tried for a client that left');
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
  t.equal(upstream.requests.length, 0);
});
