import t from 'tap';
import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import { watchSessionClient, type ClientConnection } from '../../src/dataplane/session-heartbeat.ts';

// The heartbeat's reading of a backlog (src/dataplane/session-heartbeat.ts) on a connection
// whose counters the test moves: a busy loop runs its ticks late, and a tick may fall just after
// the kernel took everything that waited, so only the socket's `drain` shows the client read.

const PERIOD_MS = 20;

/** A client connection whose counters the test sets; `drain` is the socket's event. */
function connection() {
  const events = new EventEmitter();
  const state = { bytesRead: 0, bytesWritten: 0, writableLength: 0 };
  const conn = {
    get bytesRead() { return state.bytesRead; },
    get bytesWritten() { return state.bytesWritten; },
    get writableLength() { return state.writableLength; },
    on: (event: string, listener: () => void) => events.on(event, listener),
    off: (event: string, listener: () => void) => events.off(event, listener),
  } as unknown as ClientConnection;
  return { conn, state, events };
}

const openClient = () => ({ isPaused: false, readyState: WebSocket.OPEN, pings: 0, ping() { this.pings++; } });

const periods = (n: number) => new Promise((resolve) => setTimeout(resolve, PERIOD_MS * n + PERIOD_MS / 2));

t.test('output the kernel took after a backlog, with none waiting at any tick, is progress when the socket drained', async (t) => {
  const { conn, state, events } = connection();
  const client = openClient();
  let gone = false;
  const stop = watchSessionClient(client as unknown as WebSocket, conn, PERIOD_MS, () => (gone = true));
  t.teardown(stop);
  // Between ticks, a backlog builds and the client reads it all: the kernel takes it, `drain` follows.
  const reading = setInterval(() => {
    state.bytesWritten += 1024 * 1024;
    events.emit('drain');
  }, PERIOD_MS / 2);
  await periods(6);
  clearInterval(reading);
  t.equal(gone, false, 'the session is kept');
  t.equal(client.pings, 0, 'and its client never pinged');
});

t.test('output the kernel took with nothing waiting and no drain says nothing: the silent client is pinged, then gone', async (t) => {
  const { conn, state } = connection();
  const client = openClient();
  let gone = false;
  const stop = watchSessionClient(client as unknown as WebSocket, conn, PERIOD_MS, () => (gone = true));
  t.teardown(stop);
  const taken = setInterval(() => (state.bytesWritten += 1024), PERIOD_MS / 2);
  await periods(4);
  clearInterval(taken);
  t.equal(client.pings, 1, 'pinged once');
  t.equal(gone, true, 'then taken for gone');
});

t.test('once stopped, the watch no longer listens for drain', async (t) => {
  const { conn, events } = connection();
  const stop = watchSessionClient(openClient() as unknown as WebSocket, conn, PERIOD_MS, () => {});
  t.equal(events.listenerCount('drain'), 1);
  stop();
  t.equal(events.listenerCount('drain'), 0);
});

t.test("a pong read in the turn of the tick that would end the session keeps it: the judgement waits for that turn's reads", async (t) => {
  const { conn, state } = connection();
  const client = openClient();
  let gone = false;
  // After the ping, each tick is followed, in its own turn, by the client's answer being read (a
  // loop that stalled runs due timers before its reads): modelled by a read right after the tick.
  const conn2 = Object.create(conn, {
    writableLength: {
      get() {
        if (client.pings > 0) queueMicrotask(() => (state.bytesRead += 6));
        return 0;
      },
    },
  }) as ClientConnection;
  const stop = watchSessionClient(client as unknown as WebSocket, conn2, PERIOD_MS, () => (gone = true));
  t.teardown(stop);
  await periods(5);
  t.ok(client.pings > 0, 'pinged, its answer read only in the turn after the tick');
  t.equal(gone, false, 'the session is kept');
});
