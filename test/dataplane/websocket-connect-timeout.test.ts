import { spawn } from 'node:child_process';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { DEFAULT_DATA_PLANE_OPTIONS } from '../../src/dataplane/data-plane-deps.ts';
import { openUpstreamWebSocket } from '../../src/dataplane/open-upstream-websocket.ts';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { logOf, realtimeRoute, upgradeAnswer } from './helpers/ws-upstream.ts';

// ws times the opening handshake from before the connection opens. A timeout spent connecting
// (TCP, or TLS for wss) means the upgrade request never went out: the upstream's connection
// failing, as on the HTTP path (a cooldown, and the next Group even though the operation is
// unsafe to replay: the Group's other credentials at the same address are passed over), not an
// answer overdue.

/**
 * An address whose TCP connections never complete: a listener in a child process whose event
 * loop is blocked (so it accepts nothing) and whose accept queue is already full.
 */
async function hungAddress(t: Test): Promise<string> {
  const listener = "const s=require('net').createServer().listen({port:0,host:'127.0.0.1',backlog:1},()=>process.stdout.write(s.address().port+'\\n',()=>Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0)))";
  const child = spawn(process.execPath, ['-e', listener], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  const port = await withTimeout(new Promise<number>((r) => child.stdout.once('data', (d) => r(Number(String(d).trim())))), 10_000, 'the listener to start');
  const fillers: Socket[] = [];
  for (let i = 0; i < 8; i++) fillers.push(netConnect(port, '127.0.0.1').on('error', () => {}));
  t.teardown(() => fillers.forEach((s) => s.destroy()));
  // Every filler's connect settles (accepted into the queue) or stays pending: the queue is full either way.
  await new Promise((r) => setTimeout(r, 200));
  return `http://127.0.0.1:${port}`;
}

/** A TCP server that accepts and never says anything: a TLS handshake to it never ends. */
async function mute(t: Test): Promise<{ url: string; accepted: () => number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createNetServer((socket) => {
    accepted++;
    sockets.add(socket.on('error', () => {}).resume());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, accepted: () => accepted };
}

t.test("a TCP connect that never completes within the handshake timeout: a connect timeout, the credential cooled down and the Group's other one at the same address passed over", async (t) => {
  const address = await hungAddress(t);
  const { gw, key, group, wsUrl } = await realtimeRoute(t, address, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'], options: { headersTimeoutMs: 300 } });
  const answer = await withTimeout(upgradeAnswer(wsUrl), 10_000, 'the upgrade answer');
  t.equal(answer.status, 504);
  t.match(JSON.parse(answer.body), { error: { code: 'upstream_timeout', message: /upstream_connect_timeout/ } });
  t.match(await logOf(gw, key.id, 504), {
    error_code: 'upstream_timeout',
    attempt_count: 1,
    attempts: [{ status: null, error_code: 'upstream_connect_timeout' }],
  });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state).sort(), ['active', 'cooldown'], 'the credential tried cooled down');
});

t.test('a wss TLS handshake that never ends within the handshake timeout is a connect timeout too', async (t) => {
  const upstream = await mute(t);
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { options: { headersTimeoutMs: 300 } });
  const answer = await withTimeout(upgradeAnswer(wsUrl), 10_000, 'the upgrade answer');
  t.equal(answer.status, 504);
  t.equal(upstream.accepted(), 1, 'the TCP connection was made');
  t.match(await logOf(gw, key.id, 504), { attempts: [{ status: null, error_code: 'upstream_connect_timeout' }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['cooldown']);
});

t.test('directly, a connect that does not complete within the connect timeout ends the handshake before its own timeout', async (t) => {
  const address = await hungAddress(t);
  const handshake = openUpstreamWebSocket(address.replace('http', 'ws'), [], {}, { agent: undefined, handshakeTimeoutMs: 60_000, answerIdleTimeoutMs: 1000, connectTimeoutMs: 200, maxPayload: DEFAULT_DATA_PLANE_OPTIONS.sessionMessageMaxBytes });
  t.teardown(() => handshake.abort());
  t.same(await withTimeout(handshake.outcome, 10_000, 'the connect timeout'), { kind: 'failed', timedOut: false, code: 'upstream_connect_timeout', notDelivered: true, neverConnected: true });
});
