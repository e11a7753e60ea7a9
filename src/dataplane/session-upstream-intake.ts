import type { WebSocket } from 'ws';
import { systemClock, watchIdle, type IdleClock, type IdleWatcher } from '../streaming/index.ts';

/** What a session tells the watch of its writes to the upstream (watchUpstreamIntake). */
export interface UpstreamIntake {
  /** A message or frame was handed to the upstream's socket. */
  sent(): void;
  /** One of them has been written: the upstream took it. */
  written(): void;
  /** The gateway stopped reading the upstream: its client is slow. */
  heldBack(): void;
  /** The gateway reads the upstream again. */
  letGo(): void;
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
 * own sends wait, which is then the client's doing (its heartbeat judges it); once let go it has
 * the whole `idleMs` again.
 */
export function watchUpstreamIntake(upstream: Pick<WebSocket, 'bufferedAmount'>, idleMs: number, onStalled: () => void, clock: IdleClock = systemClock): UpstreamIntake {
  let watch: IdleWatcher | undefined;
  // Held back for a slow client: not watched. Once let go, it has the whole idleMs again.
  let held = false;
  let ended = false;
  // What waited may have gone out with no callback telling (a relayed ping or pong queued behind it): nothing waits, nothing stalled.
  const onDue = () => {
    watch = undefined;
    if (upstream.bufferedAmount > 0) onStalled();
  };
  const watchIfWaiting = () => {
    if (watch === undefined && !held && !ended && upstream.bufferedAmount > 0) watch = watchIdle(idleMs, onDue, clock);
  };
  const unwatch = () => {
    watch?.stop();
    watch = undefined;
  };
  return {
    // A write the socket took at once leaves nothing waiting: no watcher per message on a flowing session.
    sent: watchIfWaiting,
    written() {
      if (watch === undefined) return;
      if (upstream.bufferedAmount === 0) unwatch();
      else watch.touch();
    },
    heldBack() {
      held = true;
      unwatch();
    },
    letGo() {
      held = false;
      watchIfWaiting();
    },
    stop() {
      ended = true;
      unwatch();
    },
  };
}
