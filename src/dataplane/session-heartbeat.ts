import { WebSocket } from 'ws';

/** The payload of the gateway's own pings: the client's pong to one is the gateway's, not passed upstream. */
export const HEARTBEAT_PAYLOAD = Buffer.from('switchyard-heartbeat');

/**
 * Watches a session's client for upstreams that do not ping it themselves: a client that sent
 * nothing (message, ping or pong, an upstream's ping answered included) for `periodMs` is
 * pinged, and `onGone` runs when the next period passes silent too. A client that vanished
 * without a FIN (network lost, a NAT entry expired) is otherwise never noticed in a quiet
 * session. Returns what stops the watch.
 */
export function watchSessionClient(client: WebSocket, periodMs: number, onGone: () => void): () => void {
  let heard = false;
  let pinged = false;
  const hear = () => (heard = true);
  client.on('message', hear);
  client.on('ping', hear);
  client.on('pong', hear);
  const timer = setInterval(() => {
    // A client the gateway holds back (its upstream reads slower) is not being read: its silence says nothing.
    if (heard || client.isPaused || client.readyState !== WebSocket.OPEN) {
      heard = false;
      pinged = false;
      return;
    }
    if (pinged) return onGone();
    pinged = true;
    client.ping(HEARTBEAT_PAYLOAD);
  }, periodMs);
  // A session keeps the process alive by its sockets, not by this.
  timer.unref();
  return () => clearInterval(timer);
}
