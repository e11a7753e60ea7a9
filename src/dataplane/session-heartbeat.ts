import type { Socket } from 'node:net';
import { WebSocket } from 'ws';

/** The payload of the gateway's own pings: the client's pong to one is the gateway's, not passed upstream. */
export const HEARTBEAT_PAYLOAD = Buffer.from('switchyard-heartbeat');

/** What the heartbeat reads of the client's raw connection (the upgrade's socket). */
export type ClientConnection = Pick<Socket, 'bytesRead' | 'bytesWritten' | 'writableLength' | 'on' | 'off'>;

/**
 * Watches a session's client for upstreams that do not ping it themselves: a client that made
 * no progress for `periodMs` is pinged, and `onGone` runs when the next period passes without
 * progress too. A client that vanished without a FIN (network lost, a NAT entry expired) is
 * otherwise never noticed in a quiet session. Progress is any bytes read from the client (a
 * frame of a message that takes minutes to upload, not only a whole one), or output the kernel
 * took while some of it waited for the client: the client is reading its backlog, behind which
 * the gateway's ping waits. Output the kernel takes with nothing waiting says nothing: it is
 * taken whether or not anyone reads it. A backlog is seen at a tick, or by the socket's `drain`
 * between ticks (a busy loop runs ticks late, and one may fall just after the kernel took all).
 * Returns what stops the watch.
 */
export function watchSessionClient(client: WebSocket, connection: ClientConnection, periodMs: number, onGone: () => void): () => void {
  let read = connection.bytesRead;
  let delivered = deliveredBytes(connection);
  let backlogged = connection.writableLength > 0;
  let drained = false;
  let pinged = false;
  let stopped = false;
  const onDrain = (): void => {
    drained = true;
  };
  connection.on('drain', onDrain);
  const timer = setInterval(() => {
    const progressed = connection.bytesRead > read || drained || (backlogged && deliveredBytes(connection) > delivered);
    read = connection.bytesRead;
    delivered = deliveredBytes(connection);
    backlogged = connection.writableLength > 0;
    drained = false;
    // A client the gateway holds back (its upstream reads slower) is not being read: its silence
    // says nothing, unless what waits for it does not move either. Else a client and an upstream
    // that both stopped reading held each other's side back, each excused, and nothing ended the session.
    if (progressed || (client.isPaused && !backlogged) || client.readyState !== WebSocket.OPEN) {
      pinged = false;
      return;
    }
    if (!pinged) {
      pinged = true;
      client.ping(HEARTBEAT_PAYLOAD);
      return;
    }
    // A loop that stalled runs due timers before it reads the sockets: the client's pong may be waiting. Judged after this turn's reads.
    setImmediate(() => {
      if (stopped) return;
      if (connection.bytesRead > read) {
        read = connection.bytesRead;
        pinged = false;
        return;
      }
      onGone();
    });
  }, periodMs);
  // A session keeps the process alive by its sockets, not by this.
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
    connection.off('drain', onDrain);
  };
}

/** Bytes written to the client that the kernel has taken: `bytesWritten` counts what still waits in the socket too. */
function deliveredBytes(connection: ClientConnection): number {
  return connection.bytesWritten - connection.writableLength;
}
