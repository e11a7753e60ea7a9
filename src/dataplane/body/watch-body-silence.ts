import type { Readable } from 'node:stream';
import { watchIdle, type IdleWatcher } from '../../streaming/index.ts';
import { DataPlaneError } from '../data-plane-error.ts';

/** A request body's watch for silence; the reader touches it for every chunk and stops it at the end. */
export interface BodySilence {
  touch(): void;
  stop(): void;
}

type WatchedBody = Readable & { readonly complete?: boolean };

const UNWATCHED: BodySilence = { touch() {}, stop() {} };

/**
 * Calls `onSilent` once when no byte of a request body came for `timeoutMs` while the gateway
 * was ready to take one, with the `request_timeout` error to answer. A body held back by its
 * reader (paused: the spool file or the upstream is slower than the client) is not the
 * client's silence, and its watch starts over. A watch is one entry in the relays' shared idle
 * sweeper, not a timer, and it is only made once the loop has read what came with the
 * request's headers: most bodies come in the same packet and have ended by then.
 */
export function watchBodySilence(source: WatchedBody, timeoutMs: number | undefined, onSilent: (error: DataPlaneError) => void): BodySilence {
  if (timeoutMs === undefined || !(timeoutMs > 0) || source.complete === true || source.readableEnded) return UNWATCHED;
  const watch = new BodySilenceWatch(source, timeoutMs, onSilent);
  armSoon(watch);
  return watch;
}

/**
 * Watches waiting for the loop's check phase, armed together by one immediate; two lists
 * taking turns, so none is made per request. Not a microtask: node's parser runs each of its
 * callbacks in a scope of its own, so microtasks queued by the request's handler run before
 * the body in the same packet is read, and every request would be armed.
 */
let waiting: BodySilenceWatch[] = [];
let spare: BodySilenceWatch[] = [];

function armSoon(watch: BodySilenceWatch): void {
  waiting.push(watch);
  if (waiting.length === 1) setImmediate(armWaiting);
}

function armWaiting(): void {
  const due = waiting;
  waiting = spare;
  spare = due;
  for (const watch of due) watch.arm();
  due.length = 0;
}

class BodySilenceWatch implements BodySilence {
  readonly #source: WatchedBody;
  readonly #timeoutMs: number;
  readonly #onSilent: (error: DataPlaneError) => void;
  #watch: IdleWatcher | undefined;
  #stopped = false;

  constructor(source: WatchedBody, timeoutMs: number, onSilent: (error: DataPlaneError) => void) {
    this.#source = source;
    this.#timeoutMs = timeoutMs;
    this.#onSilent = onSilent;
  }

  arm(): void {
    if (this.#stopped || this.#source.complete === true || this.#source.readableEnded) return;
    this.#watch = watchIdle(this.#timeoutMs, () => this.#idle());
  }

  touch(): void {
    this.#watch?.touch();
  }

  stop(): void {
    this.#stopped = true;
    this.#watch?.stop();
  }

  #idle(): void {
    const source = this.#source;
    if (this.#stopped || source.complete === true || source.readableEnded || source.destroyed) return;
    if (source.readableFlowing !== true) {
      this.arm();
      return;
    }
    this.#stopped = true;
    this.#onSilent(requestBodyTimeout(this.#timeoutMs));
  }
}

/** The rest of the body is not waited for: the connection closes once the answer is sent. */
function requestBodyTimeout(timeoutMs: number): DataPlaneError {
  return new DataPlaneError('request_timeout', `No byte of the request body came for ${timeoutMs / 1000} s.`, { connection: 'close' });
}
