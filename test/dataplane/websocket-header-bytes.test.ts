import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { WebSocket } from 'ws';
import { closeOf, realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

// An upstream header value in UTF-8 (a vendor's message in its own language) reaches the client
// byte for byte over WebSocket upgrades too, as it does on every HTTP answer.

const VALUE = '模型已过载 café';

/** The bytes a header value held on the wire, as node's parser hands it over (one character per byte). */
function wireBytes(value: string | string[] | undefined): Buffer {
  return Buffer.from(String(value), 'latin1');
}

t.test('the 101 carries an upstream 101 header holding UTF-8 with its bytes as sent', async (t) => {
  const upstream = await startWsUpstream({ handshakeHeaders: () => [`x-vendor-note: ${VALUE}`] });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = new WebSocket(wsUrl);
  let res: IncomingMessage | undefined;
  client.once('upgrade', (r) => (res = r));
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  const closed = closeOf(client);
  client.close();
  await closed;
  t.same(wireBytes(res!.headers['x-vendor-note']), Buffer.from(VALUE), 'not re-encoded');
});

t.test('an upstream refusing the upgrade: its header holding UTF-8 reaches the client with its bytes as sent', async (t) => {
  const upstream = await startWsUpstream({ refuse: () => ({ status: 404, headers: { 'content-type': 'application/json', 'x-vendor-note': VALUE }, body: '{"error":{"message":"no such model"}}' }) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 404);
  t.same(wireBytes(answer.headers['x-vendor-note']), Buffer.from(VALUE), 'not re-encoded');
});
