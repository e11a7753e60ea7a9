import type { WebSocket } from 'ws';

/** What a session tells the watch of its writes to the upstream (watchUpstreamIntake). */
export interface UpstreamIntake {
  /** A message or frame was handed to the upstream's socket. */
  sent(): void;
  /** One of them has been written: the upstream took it. */
  written(): void;
  stop(): void;
}

/**
 * Watches a session's upstream for reading: one that takes none of what waits to be written to
 * it for `idleMs` has stalled (hung, its process stuck with the connection open) and `onStalled`
 * runs. Without this a stalled upstream held its session for good: the client, held back behind
 * it, is not read, so neither its close nor its connection dropping is seen, the record is never
 * written and the key's place toward a `requests` limit never given back. An upstream that only
 * sends nothing is not stalled (a live session waits for its user): only what waits for it counts.
 * Nor is one the gateway holds back for a slow client: an upstream may stop reading while its
 * own sends wait, which is then the client's doing (its heartbeat judges it).
 */
export function watchUpstreamIntake(upstream: Pick<WebSocket, 'bufferedAmount' | 'isPaused'>, idleMs: number, onStalled: () => void): UpstreamIntake {
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return {
    sent() {
      // A write the socket took at once leaves nothing waiting: no timer per message on a flowing session.
      if (timer !== undefined || upstream.bufferedAmount === 0) return;
      timer = setTimeout(() => (upstream.isPaused ? timer?.refresh() : onStalled()), idleMs);
      // The session's sockets keep the process alive, not this.
      timer.unref();
    },
    written() {
      if (timer === undefined) return;
      if (upstream.bufferedAmount === 0) stop();
      else timer.refresh();
    },
    stop,
  };
}
