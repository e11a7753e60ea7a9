import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocketServer } from 'ws';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { connect, realtimeRoute } from './helpers/ws-upstream.ts';

/**
 * An upstream that refuses the upgrade of `sk-stalled` with a 401 whose body (content-length
 * 100) stops after its first bytes and then stays silent; any other credential's upgrade
 * opens an echoing session.
 */
async function startStallingUpstream(t: Test) {
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer();
  const seen: (string | undefined)[] = [];
  // Upgraded sockets are not the server's to close.
  const sockets = new Set<Socket>();
  server.on('upgrade', (req, socket: Socket, head) => {
    seen.push(req.headers.authorization);
    sockets.add(socket);
    socket.on('error', () => {});
    if (req.headers.authorization === 'Bearer sk-stalled') {
      socket.write('HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"error":');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(`echo:${data.toString()}`)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

t.test('an upgrade refused 401 whose error body goes silent is cut at the idle timeout: the next credential opens the session and the first is disabled', async (t) => {
  const upstream = await startStallingUpstream(t);
  // The handshake timeout is far longer than the test may run: only the idle timeout can end the stalled answer.
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-stalled', 'sk-good'], options: { headersTimeoutMs: 120_000, streamIdleTimeoutMs: 200 } });

  const client = await connect(wsUrl);
  const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  client.send('hello');
  t.equal(await reply, 'echo:hello', 'the session is relayed to the second credential');
  const closed = new Promise((r) => client.once('close', r));
  client.close(1000);
  await closed;
  t.same(upstream.seen, ['Bearer sk-stalled', 'Bearer sk-good']);

  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items.find((r) => r.status === 101);
  }, 'the session record');
  t.match(record, { attempt_count: 2, attempts: [{ status: 401, error_code: 'upstream_401' }, { status: 101, error_code: null }] });
  const credentials = await gw.store.credentials.list(group.id);
  const stalled = credentials.find((c) => String(c.id) === record.attempts[0]!.credential_id);
  t.match(stalled, { state: 'disabled', disabled_reason: /401/ }, 'the credential that answered 401 is disabled, saying why');
  const good = credentials.find((c) => String(c.id) === record.attempts[1]!.credential_id);
  t.not(good?.state, 'disabled', 'the credential that opened the session stays usable');
});
