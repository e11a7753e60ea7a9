import { request } from 'node:http';
import type { Socket } from 'node:net';
import t from 'tap';
import { WebSocket } from 'ws';
import { eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, logOf, openSession, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

/** The bound on each wait: an event that never comes fails the test rather than hangs it. */
const CAP_MS = 5000;

/** The payload of `ws`'s next ping, pong or message. */
function next(ws: WebSocket, event: 'ping' | 'pong' | 'message'): Promise<string> {
  return withTimeout(new Promise((r) => ws.once(event, (data: Buffer) => r(data.toString()))), CAP_MS, `a ${event}`);
}

/**
 * `from` pings `to`'s peer through the gateway while `to` reads nothing: the pong that comes
 * back must be the one `to` sends once it reads again (its ws answers before it reports the
 * ping), never one the gateway made up. Resolves with that pong's payload and whether `to` had
 * seen the ping when it came.
 */
async function pingThrough(from: WebSocket, to: WebSocket, payload: string): Promise<[string, boolean]> {
  let seen = false;
  to.once('ping', () => (seen = true));
  to.pause();
  let seenWhenPonged = false;
  from.once('pong', () => (seenWhenPonged = seen));
  const ponged = next(from, 'pong');
  from.ping(payload);
  // Long enough for a pong the gateway answered itself to come first; the outcome does not depend on it otherwise.
  setTimeout(() => to.resume(), 100);
  return [await ponged, seenWhenPonged];
}

t.test('pings and pongs pass through both ways: a heartbeat judges the peer, not the gateway', async (t) => {
  const { client, up } = await openSession(t);
  const echoed = next(client, 'message');
  client.send('hello');
  await echoed;
  t.same(await pingThrough(up, client, 'upstream-beat'), ['upstream-beat', true], 'the upstream\'s ping is answered by the client');
  t.same(await pingThrough(client, up, 'client-beat'), ['client-beat', true], 'the client\'s ping is answered by the upstream');
});

t.test('a client that answers nothing in a quiet session is ended after the heartbeat: 1011 upstream, recorded client_stalled', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { options: { sessionHeartbeatMs: 50 } });
  // Sends nothing and answers no ping: to the gateway, a client whose network went away without a FIN.
  const client = new WebSocket(wsUrl, { autoPong: false });
  t.teardown(() => client.terminate());
  client.on('error', () => {});
  const pinged = next(client, 'ping');
  await new Promise((r) => client.once('open', r));
  await pinged;
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'client_stalled', client_aborted: false });
  t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1011, 'the upstream is told the gateway could not go on');
});

t.test('a client that answers the heartbeat keeps its quiet session; its pongs to the gateway stay at the gateway', async (t) => {
  let upstreamPongs = 0;
  const upstream = await startWsUpstream({ onSession: (ws) => ws.on('pong', () => upstreamPongs++) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url, { options: { sessionHeartbeatMs: 50 } });
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  // Three heartbeats answered: each came a silent period after the last, so the session outlived the cut-off many times.
  for (let beat = 0; beat < 3; beat++) await next(client, 'ping');
  const echoed = next(client, 'message');
  client.send('still here');
  t.equal(await echoed, 'echo:still here');
  t.equal(upstreamPongs, 0, 'no pong reached the upstream, which sent no ping');
});

t.test('a message over the cap ends the session: 1009 to its sender, the other side closed as for a break, recorded by side', async (t) => {
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      if (text === 'big please') ws.send(Buffer.alloc(2048, 1), { binary: true });
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { options: { sessionMessageMaxBytes: 1024 } });

  // The client's message, sent in fragments, is assembled whole before it is relayed: the cap counts the whole.
  const first = await connect(wsUrl);
  const firstClosed = withTimeout(closeOf(first), CAP_MS, 'the first client\'s close');
  first.send(Buffer.alloc(600, 1), { binary: true, fin: false });
  first.send(Buffer.alloc(600, 1), { binary: true, fin: true });
  t.same(await firstClosed, { code: 1009, reason: '' }, 'the client is told its message was too big');
  const clientSide = await logOf(gw, key.id, 101);
  t.match(clientSide, { status: 101, error_code: 'client_message_too_big', client_aborted: false });
  t.equal(await eventually(() => upstream.closeCodes[0], 'the first session\'s upstream side closed'), 1011);

  // The upstream's message over the cap: the upstream gets 1009, the client 1014 "bad gateway".
  const second = await connect(wsUrl);
  const secondClosed = withTimeout(closeOf(second), CAP_MS, 'the second client\'s close');
  second.send('big please');
  t.same(await secondClosed, { code: 1014, reason: 'upstream message too big' });
  t.equal(await eventually(() => upstream.closeCodes[1], 'the second session\'s upstream side closed'), 1009);
  const upstreamSide = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items.find((r) => r.request_id !== clientSide.request_id);
  }, 'the second session\'s record');
  t.match(upstreamSide, { status: 101, error_code: 'upstream_message_too_big', client_aborted: false });
});

/** A client's raw connection to a session at `wsUrl`, upgraded: its frames are the test's to write. */
function rawClient(wsUrl: string): Promise<Socket> {
  const upgraded = new Promise<Socket>((resolve, reject) => {
    const headers = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    const req = request(wsUrl.replace('ws', 'http'), { headers });
    req.once('upgrade', (_res, socket: Socket) => resolve(socket));
    req.once('response', (res) => reject(new Error(`the upgrade was answered ${res.statusCode}`)));
    req.once('error', reject);
    req.end();
  });
  return withTimeout(upgraded, CAP_MS, 'the upgrade');
}

/** The head of a client's final binary frame of `length` bytes, masked with the zero key (RFC 6455 §5.2). */
function binaryFrameHead(length: number): Buffer {
  const head = Buffer.alloc(14);
  head[0] = 0x82;
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(length), 2);
  return head;
}

t.test('a client uploading one message slower than the heartbeat period keeps its session: each part of it counts as hearing from the client', async (t) => {
  const PARTS = 40;
  const message = Buffer.alloc(PARTS * 8192);
  for (let i = 0; i < message.length; i++) message[i] = i % 251;
  let outcome!: (what: Buffer | 'closed') => void;
  const arrived = new Promise<Buffer | 'closed'>((r) => (outcome = r));
  const upstream = await startWsUpstream({
    onSession: (ws) => {
      ws.once('message', (data: Buffer) => outcome(data));
      ws.once('close', () => outcome('closed'));
    },
    onMessage: () => {},
  });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url, { options: { sessionHeartbeatMs: 100 } });
  const client = await rawClient(wsUrl);
  t.teardown(() => client.destroy());
  client.on('error', () => {});
  // One frame, a part every 20 ms: whole after about eight heartbeat periods, during which the
  // client cannot answer a ping (a ping may not come inside a frame).
  client.write(binaryFrameHead(message.length));
  for (let part = 0; part < PARTS && !client.destroyed; part++) {
    await new Promise((r) => setTimeout(r, 20));
    client.write(message.subarray(part * 8192, (part + 1) * 8192));
  }
  const got = await withTimeout(arrived, CAP_MS, 'the message upstream, or the session\'s end');
  t.ok(Buffer.isBuffer(got) && got.equals(message), 'the session lived to relay the message whole');
});

t.test('a client reading a large backlog slower than the heartbeat period keeps its session: its reading counts as hearing from it', async (t) => {
  const FRAMES = 128;
  const frame = (i: number) => Buffer.alloc(128 * 1024, i % 251);
  const { client, up } = await openSession(t, { options: { sessionHeartbeatMs: 200 } });
  const received: Buffer[] = [];
  const outcome = new Promise<'all read' | 'closed'>((resolve) => {
    client.on('message', (data: Buffer) => {
      received.push(data);
      if (received.length === FRAMES) return resolve('all read');
      // About a frame every 10 ms: the gateway's ping waits behind its 1 MiB hold and the
      // loopback's buffers, longer than a period, while the kernel takes more of the backlog
      // (a megabyte or so at a time on loopback) several times a period.
      client.pause();
      setTimeout(() => client.resume(), 10);
    });
    client.once('close', () => resolve('closed'));
  });
  for (let i = 0; i < FRAMES; i++) up.send(frame(i), { binary: true });
  t.equal(await withTimeout(outcome, 30_000, 'every frame at the client, or the session\'s end'), 'all read');
  t.ok(received.every((data, i) => data.equals(frame(i))), 'every frame arrives, in order');
});
