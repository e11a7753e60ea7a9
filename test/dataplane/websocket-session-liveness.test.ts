import t from 'tap';
import { WebSocket } from 'ws';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { connect, logOf, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

/** Bounded, so that an event that never comes fails the test rather than hangs it. */
function within<T>(what: string, wait: (resolve: (value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} came`)), 5000);
    wait((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

/** The payload of `ws`'s next ping, pong or message. */
function next(ws: WebSocket, event: 'ping' | 'pong' | 'message'): Promise<string> {
  return within(event, (r) => ws.once(event, (data: Buffer) => r(data.toString())));
}

function closeOf(ws: WebSocket): Promise<[number, string]> {
  return within('close', (r) => ws.once('close', (code, reason) => r([code, reason.toString()])));
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
  let session: WebSocket | undefined;
  const upstream = await startWsUpstream({ onSession: (ws) => (session = ws) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const echoed = next(client, 'message');
  client.send('hello');
  await echoed;
  t.same(await pingThrough(session!, client, 'upstream-beat'), ['upstream-beat', true], 'the upstream\'s ping is answered by the client');
  t.same(await pingThrough(client, session!, 'client-beat'), ['client-beat', true], 'the client\'s ping is answered by the upstream');
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
  const firstClosed = closeOf(first);
  first.send(Buffer.alloc(600, 1), { binary: true, fin: false });
  first.send(Buffer.alloc(600, 1), { binary: true, fin: true });
  t.same(await firstClosed, [1009, ''], 'the client is told its message was too big');
  const clientSide = await logOf(gw, key.id, 101);
  t.match(clientSide, { status: 101, error_code: 'client_message_too_big', client_aborted: false });
  t.equal(await eventually(() => upstream.closeCodes[0], 'the first session\'s upstream side closed'), 1011);

  // The upstream's message over the cap: the upstream gets 1009, the client 1014 "bad gateway".
  const second = await connect(wsUrl);
  const secondClosed = closeOf(second);
  second.send('big please');
  t.same(await secondClosed, [1014, 'upstream message too big']);
  t.equal(await eventually(() => upstream.closeCodes[1], 'the second session\'s upstream side closed'), 1009);
  const upstreamSide = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items.find((r) => r.request_id !== clientSide.request_id);
  }, 'the second session\'s record');
  t.match(upstreamSide, { status: 101, error_code: 'upstream_message_too_big', client_aborted: false });
});
