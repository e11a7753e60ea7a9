import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer as createGateway } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute } from './helpers/data-plane-harness.ts';
import { eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, logOf, openSession, REALTIME_PATH, startWsUpstream } from './helpers/ws-upstream.ts';

// Each side is closed within this or the test fails: far below ws's 30-second close timeout, the
// bound a session held up by backpressure used to end on.
const PROMPTLY_MS = 5000;
const CHUNK = Buffer.alloc(64 * 1024, 1);
// 16 MiB: more than the loopback buffers and the gateway's 1 MiB hold between the two sides, so the gateway stops reading the sender.
const CHUNKS = 256;
const USAGE = JSON.stringify({ type: 'transcription.done', text: 'x', usage: { prompt_tokens: 90, completion_tokens: 30, total_tokens: 120 } });

/** Sends 16 MiB and waits until the gateway stops reading it: what waits in `ws` is there, and stays. */
async function sendAudioUntilHeld(ws: WebSocket): Promise<void> {
  for (let i = 0; i < CHUNKS; i++) ws.send(CHUNK, { binary: true });
  let last = -1;
  let unchanged = 0;
  await eventually(() => {
    unchanged = ws.bufferedAmount === last ? unchanged + 1 : 0;
    last = ws.bufferedAmount;
    return last > 0 && unchanged >= 5 ? true : undefined;
  }, 'the gateway holding the sender back');
}

/**
 * A session whose upstream reads nothing and whose client has sent 16 MiB: the gateway holds
 * the client back once 1 MiB waits for the upstream. `clientClose`: the client's side's close.
 */
async function sessionToDeafUpstream(t: Test) {
  const opened = await openSession(t, { upstream: { onMessage: () => {} } });
  opened.up.pause();
  const clientClose = closeOf(opened.client);
  await sendAudioUntilHeld(opened.client);
  return { ...opened, clientClose };
}

/**
 * A session whose client and upstream both stopped reading, each with 16 MiB sent: the gateway
 * holds the upstream back for its client first, then the client for its upstream. The
 * upstream's intake is not judged while it is held back, so no deadline can end the session
 * before the client's hold is proven.
 */
async function sessionHeldBothWays(t: Test, streamIdleTimeoutMs: number, sessionHeartbeatMs?: number) {
  const opened = await openSession(t, { upstream: { onMessage: () => {} }, options: { streamIdleTimeoutMs, ...(sessionHeartbeatMs === undefined ? {} : { sessionHeartbeatMs }) } });
  opened.client.pause();
  await sendAudioUntilHeld(opened.up);
  opened.up.pause();
  await sendAudioUntilHeld(opened.client);
  return opened;
}

t.test('the client stops reading, the upstream closes, then the client closes: the upstream is read to its close and its usage recorded', async (t) => {
  const { gw, key, client, up } = await openSession(t);
  client.pause();
  const upstreamClose = closeOf(up);
  // The usage event and the upstream's close frame wait behind audio the gateway stopped reading.
  await sendAudioUntilHeld(up);
  up.send(USAGE);
  up.close(4000, 'upstream done');
  client.close(1000, 'done');
  const closed = await withTimeout(upstreamClose, PROMPTLY_MS, "the upstream's side closed");
  t.same(closed, { code: 1000, reason: 'done' }, "the upstream got the client's close");
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
});

t.test('the upstream stops reading and closes while the client\'s messages are held back: the client is told at once', async (t) => {
  const { gw, key, up, clientClose } = await sessionToDeafUpstream(t);
  up.send(USAGE);
  up.close(4000, 'upstream done');
  t.same(await withTimeout(clientClose, PROMPTLY_MS, "the client's side closed"), { code: 4000, reason: 'upstream done' });
  // The upstream never reads the gateway's answer to its close: the gateway destroys its side
  // after the grace, and the record is written once that side is closed.
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
});

t.test('a client that closed while held back, then the upstream closes without reading: the client\'s side is read to its close', async (t) => {
  const { gw, key, client, up, clientClose } = await sessionToDeafUpstream(t);
  // The client's close frame waits, unread, behind its audio: the gateway cannot see it yet.
  client.close(1000, 'done');
  up.send(USAGE);
  up.close(4000, 'upstream done');
  t.same(await withTimeout(clientClose, PROMPTLY_MS, "the client's side closed"), { code: 4000, reason: 'upstream done' });
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
});

t.test('an upstream that takes none of what waits for it for the idle timeout has stalled: 1014 to the client, the record says upstream_idle_timeout', async (t) => {
  const { gw, key, client, up } = await openSession(t, { upstream: { onMessage: () => {} }, options: { streamIdleTimeoutMs: 300 } });
  up.pause();
  const clientClose = closeOf(client);
  for (let i = 0; i < CHUNKS; i++) client.send(CHUNK, { binary: true });
  t.same(await withTimeout(clientClose, PROMPTLY_MS, "the client's side closed"), { code: 1014, reason: 'upstream not reading' });
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'upstream_idle_timeout', client_aborted: false });
});

t.test('a client that drops while held back behind a stalled upstream: the session still ends and its record is written', async (t) => {
  // The gateway does not read a client it holds back, so it cannot see it leave; the stalled upstream ends the session.
  const { gw, key, client } = await sessionHeldBothWays(t, 1500);
  // The client reads all the upstream sent: the gateway lets the upstream go (its intake is judged from
  // then) and has nothing left to write to the client, so only reading the client could show it gone.
  let received = 0;
  client.on('message', () => received++);
  client.resume();
  await eventually(() => (received === CHUNKS ? true : undefined), "the upstream's audio at the client");
  t.equal(client.readyState, client.OPEN, 'the session is open as the client drops');
  client.terminate();
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'upstream_idle_timeout' });
});

t.test('an upstream held back for a client that stopped reading, and that stops reading too: the session stays open past the idle timeout', async (t) => {
  const { gw, key, client, up } = await sessionHeldBothWays(t, 200);
  // Several idle timeouts pass while the gateway holds the upstream back (a wait, not a timing assertion).
  await sleep(1000);
  // Both read again: all that waited passes, and the session ends as its client ends it.
  client.resume();
  up.resume();
  client.close(1000, 'done');
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false });
});

t.test('a client and an upstream that both stopped reading for good: the client is judged stalled by the heartbeat, and the record written', async (t) => {
  // Each side is held back for the other: the upstream's intake is not judged while it is held,
  // and the client, held back too, is judged by what waits for it, which does not move.
  const { gw, key, client } = await sessionHeldBothWays(t, 300, 200);
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'client_stalled' });
  await eventually(() => (client.readyState === client.CLOSED ? true : undefined), "the client's side cut");
});

t.test("a session that flows never ends for its upstream's intake, however long past the idle timeout", async (t) => {
  const idleMs = 500;
  const { gw, key, client, up } = await openSession(t, { upstream: { onMessage: () => {} }, options: { streamIdleTimeoutMs: idleMs } });
  // Waits, not timing assertions: rounds through several idle timeouts, then a lull longer than one.
  // Each round the upstream reads nothing for a tenth of the timeout while 16 MiB is sent to it, so some waits for it and its intake is watched.
  const started = performance.now();
  while (performance.now() - started < 4 * idleMs) {
    up.pause();
    for (let i = 0; i < CHUNKS; i++) client.send(CHUNK, { binary: true });
    await sleep(idleMs / 10);
    up.resume();
    await eventually(() => (client.bufferedAmount === 0 ? true : undefined), "the client's audio sent");
    await sleep(idleMs / 2);
  }
  await sleep(2 * idleMs);
  t.equal(client.readyState, client.OPEN, 'the session is open');
  client.close(1000, 'done');
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false });
});

t.test('the server shuts down while the upstream is held back: the upstream is read to its close and its usage recorded', async (t) => {
  let session: WebSocket | undefined;
  const upstream = await startWsUpstream({ onSession: (ws) => (session = ws) });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-ws-held-shutdown-'));
  const server = await createGateway({ dataDir, port: 0, authKey: 'websocket-held-shutdown-auth-key-0123456789', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { key, keyValue } = await seedRoute(server.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'] });
  const client = await connect(`${server.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  t.teardown(() => client.terminate());
  const up = await eventually(() => session, 'the upstream session');
  client.pause();
  // The usage event waits behind audio the gateway stopped reading when the shutdown comes.
  await sendAudioUntilHeld(up);
  up.send(USAGE);
  await server.close();
  const logs = openSqliteLogStore(dataDir);
  try {
    const page = await logs.list({ access_key_id: key.id }, { limit: 10 });
    t.match(page.items, [{ status: 101, error_code: 'shutting_down', client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } }]);
  } finally {
    await logs.close();
  }
});
