import type { Dispatcher } from 'undici';
import type { HeaderMap } from './header-map.ts';
import { UpstreamReply, type ReplyTransport } from './upstream-reply.ts';
import { noteRequestWritten } from './request-written.ts';
import { unsupportedAnswerCoding } from './answer-transfer-coding.ts';

/**
 * One upstream exchange on undici's dispatch API: resolves with an UpstreamReply at the
 * response headers and pushes body events to it, without the Readable and promise layers of
 * `Dispatcher.request`. An abort asked for before the request started is applied as soon as
 * undici hands over its controller.
 */
export class ExchangeHandler implements Dispatcher.DispatchHandler, ReplyTransport {
  readonly #resolve: (reply: UpstreamReply) => void;
  readonly #reject: (error: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #pendingAbort: Error | undefined;
  #reply: UpstreamReply | undefined;
  #settled = false;
  /** undici started writing the request (see request-written.ts). */
  #started = false;
  /**
   * When undici started writing it (performance.now()), the time a lost connection is measured
   * from (STALE_CONNECTION_WINDOW_MS): a buffered body goes to the socket in the same turn, so it
   * is when the request was written. A streamed one is written as it is read: a loss soon after
   * its start is as soon after its end (the error errs towards a verdict, and no listener is
   * needed), and a keep-alive race on a body still uploading breaks it while sending anyway.
   */
  #startedAt = 0;
  /** The request's body as dispatched: a stream's end says that undici wrote it all. */
  readonly #body: unknown;

  constructor(resolve: (reply: UpstreamReply) => void, reject: (error: Error) => void, body?: unknown) {
    this.#resolve = resolve;
    this.#reject = reject;
    this.#body = body;
  }

  abort(reason: Error): void {
    if (this.#controller !== undefined) {
      this.#controller.abort(reason);
      return;
    }
    this.#pendingAbort ??= reason;
    // undici hands over its controller only once the request has a connection (through a proxy,
    // once CONNECT is answered), which may take the whole connect timeout: the caller hears now.
    this.#fail(reason);
  }

  /** The reply's transport: it exists only once undici has handed over its controller. */
  pause(): void {
    this.#controller?.pause();
  }

  resume(): void {
    this.#controller?.resume();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#started = true;
    this.#startedAt = performance.now();
    this.#controller = controller;
    if (this.#pendingAbort !== undefined) controller.abort(this.#pendingAbort);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: HeaderMap): void {
    // 1xx answers (100 Continue, 103 Early Hints) come before the real one.
    if (statusCode < 200 || this.#settled) return;
    const unreadable = unsupportedAnswerCoding(headers);
    if (unreadable !== undefined) {
      // A failure before the answer, as undici's own of an answer it cannot parse (the reply's onResponseError is then not heard).
      this.#fail(unreadable);
      controller.abort(unreadable);
      return;
    }
    this.#settled = true;
    this.#controller = controller;
    this.#reply = new UpstreamReply(statusCode, headers, this);
    this.#resolve(this.#reply);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#reply?.pushData(chunk);
  }

  onResponseEnd(): void {
    this.#reply?.pushEnd();
  }

  /**
   * Whether undici wrote the whole body: a buffer it writes at once, a stream as it reads it (the
   * headers timeout also runs while a stream waits for the socket to drain, an upstream that
   * does not read it).
   */
  #bodyWritten(): boolean {
    const body = this.#body as { readableEnded?: unknown } | null | undefined;
    return typeof body !== 'object' || body === null || typeof body.readableEnded !== 'boolean' || body.readableEnded;
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.#reply !== undefined && lengthOfNoBody(this.#reply.status, error)) this.#reply.pushEnd();
    else if (this.#reply !== undefined) this.#reply.pushError(error);
    else this.#fail(error);
  }

  /** Rejects the reply with a failure before its answer, noting how far the request was written. */
  #fail(error: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    noteRequestWritten(error, this.#started, this.#started && this.#bodyWritten(), this.#started ? performance.now() - this.#startedAt : undefined);
    this.#reject(error);
  }
}

/**
 * A 204 or 304 whose Content-Length undici took for a body it never got: such an answer has no
 * body (undici reads none, so no byte of one was passed on), and a 304 may state the length of
 * the representation (RFC 9110 §8.6). It ended whole; undici closes the connection behind it.
 */
function lengthOfNoBody(status: number, error: Error): boolean {
  return (status === 204 || status === 304) && (error as { code?: unknown }).code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH';
}
