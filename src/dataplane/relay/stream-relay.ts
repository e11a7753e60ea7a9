import { UPSTREAM_STREAM_ERROR, type IdleWatcher } from '../../streaming/index.ts';
import { StreamUsageAccumulator } from '../../usage/index.ts';
import type { UpstreamBodySink } from '../../upstream/index.ts';
import type { RelayContext } from './relay-context.ts';
import { watchUpstreamIdle } from './stream-failure-of.ts';
import { UpstreamErrorDetector } from './upstream-error-detector.ts';

/**
 * Largest event (or array element) held whole. Past it, its bytes are passed on as they arrive,
 * uninspected (a usage or id it carries is not read), so that an upstream sending an endless
 * event cannot make the gateway hold it all. Real events stay far below it; the largest are
 * image generation events with base64 images of a few MiB.
 */
export const MAX_HELD_EVENT_BYTES = 16 * 1024 * 1024;

/**
 * What the stream relays share: usage accumulated event by event, an idle watcher that breaks
 * off a silent upstream, an ending that writes the protocol's error element when the
 * gateway broke the stream off and the client is still there, and the record of an error
 * event the upstream sent itself (passed on with the upstream's secret masked).
 */
export abstract class StreamRelay implements UpstreamBodySink {
  protected readonly relay: RelayContext;
  protected readonly usage: StreamUsageAccumulator | undefined;
  protected readonly idle: IdleWatcher;
  /** Looks for the upstream's own error event; undefined once one was seen. */
  protected upstreamErrors: UpstreamErrorDetector | undefined;
  #upstreamErrorSeen = false;
  readonly #done: () => void;

  constructor(relay: RelayContext, done: () => void) {
    this.relay = relay;
    this.#done = done;
    const { usageStyle } = relay.options;
    this.usage = usageStyle ? new StreamUsageAccumulator(usageStyle) : undefined;
    // An error answer (400 and up) is logged by its status; only a successful stream can fail inside.
    this.upstreamErrors = relay.reply.status < 400 ? UpstreamErrorDetector.of(relay.options.streamStyle) : undefined;
    // Also the relay's, which holds it while the client's buffer is full.
    this.idle = relay.idle = watchUpstreamIdle(relay);
    relay.usageRelay = this;
    relay.options.inFlight?.addStream(relay);
  }

  abstract onData(chunk: Buffer): void;

  onEnd(): void {
    this.idle.stop();
    this.endCleanly();
    if (this.#endMissing()) {
      // The stream failed as the upstream said; only what the client needs to read it whole is added.
      if (this.#upstreamErrorSeen) this.closeAfterUpstreamError();
      else this.relay.fail('upstream_stream_broken');
    }
    this.#finish();
  }

  /**
   * A successful stream that ended cleanly without the end its protocol owes (owesEnd): the
   * client would take it for whole. Not once the gateway ended it already.
   */
  #endMissing(): boolean {
    const { relay } = this;
    return relay.reply.status < 400 && relay.outcome.streamFailure === undefined && relay.clientOpen && this.owesEnd() && !this.completed();
  }

  onError(_error: Error): void {
    this.idle.stop();
    this.relay.fail('upstream_stream_broken');
    this.#finish();
  }

  /**
   * The upstream sent its own error event, which is written next: the stream ends as the
   * upstream ends it, but failed, and the secret it may echo is masked from that event on.
   */
  protected upstreamErrorSeen(): void {
    this.#upstreamErrorSeen = true;
    this.upstreamErrors = undefined;
    this.relay.maskFromHere();
  }

  /**
   * The body turned out to be framed otherwise, and another sink relays it from here (a plain
   * body, or an SSE relay that watches and ends it itself): this relay no longer watches nor
   * ends it. Returns the `done` that sink calls.
   */
  protected leaveToBody(): () => void {
    this.idle.stop();
    this.relay.idle = undefined;
    this.relay.usageRelay = undefined;
    this.upstreamErrors = undefined;
    this.relay.options.inFlight?.deleteStream(this.relay);
    return this.#done;
  }

  /**
   * The client has the whole answer and only the usage read for the record is still to come:
   * a client leaving now need not stop an upstream whose work is done.
   */
  awaitsOnlyUsage(): boolean {
    return false;
  }

  /** Takes in what the upstream left at a clean end, before whether the stream is whole is judged. */
  protected abstract endCleanly(): void;

  /** Whether a stream that ends without completed() was cut short, however cleanly it ended. */
  protected abstract owesEnd(): boolean;

  /** Ends the client's stream after the upstream's own error event, when it ended without the end it owes. */
  protected closeAfterUpstreamError(): void {}

  /** Ends the client's stream after the gateway broke it off with `code`. */
  protected abstract writeFailure(code: string): void;

  /** Takes in what the relay still holds once the stream's end is settled: what the client got whole is read, what it is still owed passed on. */
  protected readHeld(): void {}

  /**
   * Whether the protocol's final event (or the array's `]`) was passed on: the client has the
   * whole stream. Asked only when a stream ends (a stall, a break, or a clean end of a stream
   * that owes its end), so that reading costs nothing.
   */
  protected completed(): boolean {
    return false;
  }

  #finish(): void {
    const failure = this.relay.outcome.streamFailure;
    // A client that stopped reading would not read an error event either.
    if (failure === 'client_stalled') this.relay.res.destroy();
    // A stall or break after the final event ends the client's stream as the upstream would have.
    else if (failure !== undefined && this.completed()) this.relay.outcome.streamFailure = undefined;
    else if (failure !== undefined && this.relay.clientOpen) this.writeFailure(failure);
    // After writeFailure, which places its error by what is still held, or drops it.
    this.readHeld();
    this.relay.outcome.usage = this.usage?.result();
    // Recorded only now: the client already has the upstream's error event, the gateway adds
    // none, and a break-off by the gateway after it is what the record names.
    if (this.#upstreamErrorSeen) this.relay.fail(UPSTREAM_STREAM_ERROR);
    this.#done();
    this.relay.options.inFlight?.deleteStream(this.relay);
  }
}
