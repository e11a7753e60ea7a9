import type { ServerResponse } from 'node:http';
import { REFUSAL_REASONS } from '../../engine/index.ts';
import type { IdleWatcher, StreamErrorStyle } from '../../streaming/index.ts';
import type { TokenUsage, UsageStyle } from '../../usage/index.ts';
import type { OutgoingHeaders, UpstreamReply } from '../../upstream/index.ts';
import { drainIfBodyUnread } from '../drain-if-body-unread.ts';
import { SecretMaskingStream } from '../mask-upstream-secret.ts';
import type { StreamEndStyle } from './final-stream-event.ts';
import type { InFlightRequests } from '../in-flight-requests.ts';
import { NO_RETRY } from '../retry-hints.ts';
import { sendGatewayError } from '../send-gateway-error.ts';
import { streamFailureOf, streamFailureStatus, watchUpstreamIdle } from './stream-failure-of.ts';

export interface DeliveryOptions {
  res: ServerResponse;
  requestId: string;
  streamStyle: StreamErrorStyle;
  /** What ends a whole stream (final-stream-event): the error style's final event, or the operation's own (an image stream's completed event, a transcription's or speech's done event). */
  streamEnd: StreamEndStyle;
  usageStyle: UsageStyle | undefined;
  /** The gateway asked for stream usage on the client's behalf: drop the usage-only chunk. */
  dropUsageChunk: boolean;
  /** Look for the `id` of the stored object the answer names (a response, a voice), for routing later calls back. */
  captureResponseId: boolean;
  /** Told the id a stream's `response.created` names as soon as it passes, while the stream still runs. */
  onResponseId: ((id: string) => void) | undefined;
  idleTimeoutMs: number;
  /**
   * The upstream's answer began to reach the client: its status and headers sent ahead of its
   * body, or its first body bytes. Called once; never for the gateway's own error in its place.
   */
  onFirstByte(): void;
  /** Largest non-streaming body kept aside to read usage and ids from. */
  captureLimitBytes: number;
  /** The operation always streams: a JSON answer is a stream framed as one array (generate style without alt=sse). */
  streamingOperation: boolean;
  /**
   * The request asked for a stream (its stream flag, or an operation that always streams): a
   * successful answer not typed as SSE is read for being one all the same, and a JSON error
   * object in its place is the upstream's error.
   */
  streamRequested?: boolean;
  /**
   * Set for a resumed responses stream (a retrieve with a whole-number `starting_after`): the
   * number after it, the gateway's error event's when no numbered event passed, as an SDK drops
   * one numbered at or below `starting_after`. One resumed at or past its end rightly ends with
   * no event at all, so it owes its final event only once an event has been passed on.
   */
  firstSequence?: number;
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
  /**
   * The status recorded in place of the upstream's: the gateway's HTTP error's, when the answer
   * (a stream or a plain body) failed before its first byte and that error was answered instead
   * (streamFailure is its code), or `client_closed`'s 499, when the client left with its headers
   * still held.
   */
  answeredStatus: number | undefined;
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
  readonly outcome: DeliveryOutcome = { usage: undefined, streamFailure: undefined, clientAborted: false, responseId: undefined, answeredStatus: undefined };
  readonly res: ServerResponse;
  readonly reply: UpstreamReply;
  readonly options: DeliveryOptions;
  /** The secret the upstream was sent (undefined for an answer already masked): masked out of its own error (maskFromHere). */
  readonly secret: string | undefined;
  /** A stream relay's idle watcher: held while the client's buffer is full, so that a client reading slowly is not taken for a silent upstream. */
  idle: IdleWatcher | undefined;
  /**
   * A relay with no idle watcher of its own (a plain body) gets one at the first flush, which
   * comes only when its body is still open after the turn that brought its first bytes: a body
   * read whole in one turn (the usual JSON answer, when it arrives in one read) is ended before
   * and never makes one; a chunked one whose last, empty chunk comes in a later read makes one
   * and stops it. From then on, an upstream silent for the idle timeout is
   * `upstream_idle_timeout`, a client that reads nothing for it `client_stalled`.
   */
  watchesAfterFirstTurn = false;
  /**
   * The relay of an answer whose usage may still come once the client has left (a stream, a
   * successful plain JSON body): asked, when the client leaves, whether that must stop the upstream.
   */
  usageRelay: { awaitsOnlyUsage(): boolean } | undefined;
  /** Its place among the in-flight streams (InFlightRequests), -1 while not one. */
  slot = -1;
  #first = true;
  /** onFirstByte was called: at the first body bytes, or before them when the head went out alone. */
  #timed = false;
  #waitingForDrain = false;
  #queued: Buffer[] = [];
  #flushScheduled = false;
  /** Made when the client's buffer first fills (most responses never need it). */
  #resume: (() => void) | undefined;
  /** The answer's headers while they wait for its first bytes (see head). */
  #heldHead: OutgoingHeaders | undefined;
  /** Sends the held headers when the first bytes are late (see releaseHeadAfter); made only then. */
  #headTimer: NodeJS.Timeout | undefined;
  /** Masks what is written from the upstream's own error on (maskFromHere); made only then. */
  #masking: SecretMaskingStream | undefined;

  constructor(reply: UpstreamReply, options: DeliveryOptions, secret?: string) {
    this.reply = reply;
    this.options = options;
    this.res = options.res;
    this.secret = secret;
  }

  /**
   * The upstream's own error (an error event, an error element) is written next: it and all
   * written after it have the secret masked, as an error answer's body has. Successful events
   * before it are not scanned: masking every stream would cost every read.
   */
  maskFromHere(): void {
    if (this.secret !== undefined) this.#masking ??= new SecretMaskingStream(this.secret);
  }

  /**
   * A held head's length, for a body masked before its first byte went out (an answer whose
   * head went out has no length); `decoded`, a compressed one sent decoded: without its
   * `content-encoding`, and with a length whether or not the upstream gave one.
   */
  resizeHeldBody(length: number, decoded = false): void {
    const head = this.#heldHead;
    if (head === undefined) return;
    if (decoded) delete head['content-encoding'];
    if (decoded || head['content-length'] !== undefined) head['content-length'] = String(length);
  }

  /**
   * Writes the answer's status and headers, or, `held`, keeps them to go with its first bytes
   * (or after releaseHeadAfter's grace): until then the answer can still be the gateway's own
   * error (answerFailure). node sends written headers with the first body bytes either way.
   */
  head(headers: OutgoingHeaders, held: boolean): void {
    if (held) this.#heldHead = headers;
    else this.#writeHead(headers);
  }

  /**
   * Writes the held head if no bytes came within `ms`: an SDK's timeout runs until the
   * response's headers come, so a stream whose first event is later than that (a model that
   * thinks first) must have them before. A failure after that is the stream's error event.
   */
  releaseHeadAfter(ms: number): void {
    if (this.#heldHead === undefined || this.res.writableEnded || this.res.destroyed) return;
    this.#headTimer = setTimeout(() => {
      this.#headTimer = undefined;
      if (this.#heldHead === undefined || !this.clientOpen || this.res.writableEnded) return;
      this.#writeHead(this.#heldHead);
      this.flushHead();
    }, ms);
  }

  /**
   * Sends the written head ahead of the body. The client has the upstream's answer from now
   * (its time to first byte), though nothing of the body was written: not `started`.
   */
  flushHead(): void {
    this.res.flushHeaders();
    if (this.clientOpen) this.#timeFirstByte();
  }

  /** Whether anything was written (or queued to be) to the client yet. */
  get started(): boolean {
    return !this.#first;
  }

  markFirstByte(): void {
    if (!this.#first) return;
    this.#first = false;
    this.#timeFirstByte();
  }

  #timeFirstByte(): void {
    if (this.#timed) return;
    this.#timed = true;
    this.options.onFirstByte();
  }

  write(data: Buffer | string): void {
    this.markFirstByte();
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    this.#queued.push(this.#masking === undefined ? bytes : this.#masking.data(bytes));
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** Writes what this turn queued (scheduled by write). */
  flush(): void {
    this.#flushScheduled = false;
    const data = this.#take();
    if (data === undefined || this.res.destroyed) return;
    if (this.#heldHead !== undefined) this.#writeHead(this.#heldHead);
    // A flush per turn of upstream reads: this turn's activity for a plain body's watcher.
    if (this.watchesAfterFirstTurn) (this.idle ??= watchUpstreamIdle(this)).touch();
    if (this.res.write(data) || this.#waitingForDrain || this.res.destroyed) return;
    this.#waitingForDrain = true;
    this.idle?.hold();
    this.reply.pause();
    this.res.once(
      'drain',
      (this.#resume ??= () => {
        this.#waitingForDrain = false;
        this.idle?.release();
        this.reply.resume();
      }),
    );
  }

  /** Ends the client's response with whatever is still queued. */
  end(): void {
    this.#stopHeadTimer();
    // A tail the masking held, as it may have begun the secret: nothing more comes to finish it.
    const held = this.#masking?.end();
    if (held !== undefined) this.#queued.push(held);
    const data = this.#take();
    if (this.res.writableEnded || this.res.destroyed) return;
    if (this.#heldHead !== undefined) this.#writeHead(this.#heldHead);
    if (data === undefined) this.res.end();
    else this.res.end(data);
  }

  /** Records why the gateway broke off the stream, unless something else ended it first. */
  fail(code: string): void {
    if (!this.outcome.clientAborted && this.outcome.streamFailure === undefined) this.outcome.streamFailure = code;
  }

  /**
   * An answer (a stream or a plain body) that failed with `code` before anything was written,
   * its headers held: answered with the gateway's HTTP error in the client's protocol instead.
   * False when it cannot be.
   */
  answerFailure(code: string): boolean {
    if (this.#heldHead === undefined || this.started) return false;
    this.#heldHead = undefined;
    this.#stopHeadTimer();
    const { streamStyle, requestId } = this.options;
    const status = streamFailureStatus(code);
    // The upstream took the request (it may bill it): an SDK is not to send it again. A shutdown's
    // retry goes to a gateway that is up again.
    const headers = code === 'shutting_down' ? undefined : NO_RETRY;
    // The responses protocol's errors have the completions shape.
    if (!sendGatewayError(this.res, streamStyle === 'responses' ? 'completions' : streamStyle, { status, code, message: streamFailureOf(code).message, headers }, requestId)) return false;
    // Started, but untimed: a time to first byte is the upstream's answer's, not the gateway's error's.
    this.#first = false;
    this.outcome.answeredStatus = status;
    return true;
  }

  /** The client left; with the answer's headers still held, nothing reached it: it left before the answer began (499). */
  clientLeft(): void {
    this.outcome.clientAborted = true;
    this.#stopHeadTimer();
    // No drain is to come: an upstream held back for the client is read on (for its usage) or aborted.
    if (this.#waitingForDrain) this.#resume?.();
    if (this.#heldHead !== undefined) this.outcome.answeredStatus = REFUSAL_REASONS.client_closed.status;
  }

  /** The client may still be written to. */
  get clientOpen(): boolean {
    return !this.outcome.clientAborted && !this.res.destroyed;
  }

  #writeHead(headers: OutgoingHeaders): void {
    this.#heldHead = undefined;
    this.#stopHeadTimer();
    // Answered while the request's body still uploads (an early error, rarely a success): the
    // rest is drained once the answer is sent. One property read on the usual path.
    if (!this.res.req.complete) drainIfBodyUnread(this.res, headers);
    this.res.writeHead(this.reply.status, headers);
  }

  #stopHeadTimer(): void {
    if (this.#headTimer === undefined) return;
    clearTimeout(this.#headTimer);
    this.#headTimer = undefined;
  }

  #take(): Buffer | undefined {
    const queued = this.#queued;
    if (queued.length === 0) return undefined;
    this.#queued = [];
    return queued.length === 1 ? queued[0] : Buffer.concat(queued);
  }
}
