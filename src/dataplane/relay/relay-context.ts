import type { ServerResponse } from 'node:http';
import type { IdleWatcher, StreamErrorStyle } from '../../streaming/index.ts';
import type { TokenUsage, UsageStyle } from '../../usage/index.ts';
import type { UpstreamReply } from '../../upstream/index.ts';
import type { InFlightRequests } from '../in-flight-requests.ts';
import { watchUpstreamIdle } from './stream-failure-of.ts';

export interface DeliveryOptions {
  res: ServerResponse;
  requestId: string;
  streamStyle: StreamErrorStyle;
  usageStyle: UsageStyle | undefined;
  /** The gateway asked for stream usage on the client's behalf: drop the usage-only chunk. */
  dropUsageChunk: boolean;
  /** Look for the `id` of a created response (responses style), for routing later calls back. */
  captureResponseId: boolean;
  idleTimeoutMs: number;
  onFirstByte(): void;
  /** Largest non-streaming body kept aside to read usage and ids from. */
  captureLimitBytes: number;
  /** The operation always streams: a JSON answer is a stream framed as one array (generate style without alt=sse). */
  streamingOperation: boolean;
  /** Where a stream relay is registered while it runs, for a shutdown to end it. */
  inFlight?: InFlightRequests;
  /**
   * Points the caller's watch on the client's connection at what a client leaving now means
   * (undefined: nothing). The caller watches for the whole request, attempts included, so
   * that a phase changes a pointer, not listeners.
   */
  onClientGone: (handler: (() => void) | undefined) => void;
}

export interface DeliveryOutcome {
  usage: TokenUsage | undefined;
  /**
   * A reason code when the stream was ended by the gateway (idle upstream, broken upstream),
   * or `upstream_stream_error` when the upstream sent its own error event in it.
   */
  streamFailure: string | undefined;
  clientAborted: boolean;
  /** `id` of a created response, for routing later resource calls back to the same upstream. */
  responseId: string | undefined;
}

/**
 * What every relay shares: writes to the client that pause the upstream while the client's
 * buffer is full, the first-byte mark, and the outcome the log record is filled from.
 * Writes made in one turn of the event loop (the chunks of one upstream read: a stream's
 * events arrive as one chunk each) go to the client as one chunk, in a microtask once the
 * turn's callback returns, or with the end: one chunk header and one buffer instead of one per
 * event. A microtask rather than process.nextTick: node 20 runs its tick queue with a new Map
 * for promise rejections each time, which a microtask does not cost.
 */
export class RelayContext {
  readonly outcome: DeliveryOutcome = { usage: undefined, streamFailure: undefined, clientAborted: false, responseId: undefined };
  readonly res: ServerResponse;
  readonly reply: UpstreamReply;
  readonly options: DeliveryOptions;
  /** A stream relay's idle watcher: held while the client's buffer is full, so that a client reading slowly is not taken for a silent upstream. */
  idle: IdleWatcher | undefined;
  /**
   * A relay with no idle watcher of its own (a plain body) gets one when the client's buffer
   * first fills: a client that then reads nothing for the idle timeout is `client_stalled`.
   */
  watchesWhenHeld = false;
  #first = true;
  #waitingForDrain = false;
  #queued: Buffer[] = [];
  #flushScheduled = false;
  /** Made when the client's buffer first fills (most responses never need it). */
  #resume: (() => void) | undefined;

  constructor(reply: UpstreamReply, options: DeliveryOptions) {
    this.reply = reply;
    this.options = options;
    this.res = options.res;
  }

  /** Whether anything was written (or queued to be) to the client yet. */
  get started(): boolean {
    return !this.#first;
  }

  markFirstByte(): void {
    if (!this.#first) return;
    this.#first = false;
    this.options.onFirstByte();
  }

  write(data: Buffer | string): void {
    this.markFirstByte();
    this.#queued.push(typeof data === 'string' ? Buffer.from(data) : data);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** Writes what this turn queued (scheduled by write). */
  flush(): void {
    this.#flushScheduled = false;
    const data = this.#take();
    if (data === undefined || this.res.destroyed) return;
    if (this.res.write(data) || this.#waitingForDrain || this.res.destroyed) return;
    this.#waitingForDrain = true;
    if (this.idle === undefined && this.watchesWhenHeld) this.idle = watchUpstreamIdle(this);
    this.idle?.hold();
    this.reply.pause();
    this.res.once(
      'drain',
      (this.#resume ??= () => {
        this.#waitingForDrain = false;
        // A watcher made for the hold goes with it: a plain body's silent upstream is the upstream client's to time out.
        if (this.watchesWhenHeld) {
          this.idle?.stop();
          this.idle = undefined;
        } else this.idle?.release();
        this.reply.resume();
      }),
    );
  }

  /** Ends the client's response with whatever is still queued. */
  end(): void {
    const data = this.#take();
    if (this.res.writableEnded || this.res.destroyed) return;
    if (data === undefined) this.res.end();
    else this.res.end(data);
  }

  /** Records why the gateway broke off the stream, unless something else ended it first. */
  fail(code: string): void {
    if (!this.outcome.clientAborted && this.outcome.streamFailure === undefined) this.outcome.streamFailure = code;
  }

  /** The client may still be written to. */
  get clientOpen(): boolean {
    return !this.outcome.clientAborted && !this.res.destroyed;
  }

  #take(): Buffer | undefined {
    const queued = this.#queued;
    if (queued.length === 0) return undefined;
    this.#queued = [];
    return queued.length === 1 ? queued[0] : Buffer.concat(queued);
  }
}
