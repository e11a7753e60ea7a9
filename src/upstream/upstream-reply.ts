import { Readable } from 'node:stream';
import type { HeaderMap } from './header-map.ts';

/** Receives an upstream response body as it arrives. */
export interface UpstreamBodySink {
  onData(chunk: Buffer): void;
  onEnd(): void;
  /** A transport failure or an abort; nothing follows it. */
  onError(error: Error): void;
}

/** What the reply needs from the transport underneath. */
export interface ReplyTransport {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

/** The first bytes of a reply body and, when the body goes on, a way to send the rest. */
export interface ReplyHead {
  readonly head: Buffer;
  /**
   * Undefined when the body ended within the limit. Otherwise: a reply with this status and
   * `headers` whose body is `first` (the head as the caller rewrote it), then the rest of this
   * body as it arrives, through `map` when given. Until it is consumed the transport is paused
   * past 64 KiB, as for any reply. Aborting the original reply ends both.
   */
  readonly rest: ((headers: HeaderMap, first: Buffer, map?: BodyMap) => UpstreamReply) | undefined;
}

/** Rewrites a body as it passes: what each chunk becomes, and what is left to send at its end. */
export interface BodyMap {
  data(chunk: Buffer): Buffer | undefined;
  end(): Buffer | undefined;
}

/** Chunks kept for a sink not yet attached before the transport is paused. */
const EARLY_BUFFER_BYTES = 64 * 1024;

/**
 * An upstream response: status and headers, then body events pushed to one sink. Events
 * that arrive before the sink is attached are kept (the transport is paused past 64 KiB),
 * so the caller may inspect the status first. A callback sink costs far less per response
 * than a Readable, which is why the data plane consumes replies this way.
 * The chunks of one turn of the event loop (undici hands over each HTTP chunk of a read
 * separately, and a stream sends one event per chunk) reach the sink as one chunk, in a
 * microtask once undici's callback returns, or before the end: the sink inspects and writes
 * once per read instead of once per event.
 */
export class UpstreamReply {
  readonly status: number;
  readonly headers: HeaderMap;
  readonly #transport: ReplyTransport;
  #sink: UpstreamBodySink | undefined;
  #early: Buffer[] | undefined;
  #earlyBytes = 0;
  #earlyPaused = false;
  #outcome: 'end' | Error | undefined;
  #done = false;
  /** Chunks of this turn not yet handed to the sink. */
  #turn: Buffer[] | undefined;
  #turnScheduled = false;

  constructor(status: number, headers: HeaderMap, transport: ReplyTransport) {
    this.status = status;
    this.headers = headers;
    this.#transport = transport;
  }

  /** Attaches the body's consumer; early events are replayed to it at once. */
  consume(sink: UpstreamBodySink): void {
    if (this.#sink !== undefined) throw new Error('an upstream reply body can be consumed once');
    this.#sink = sink;
    const early = this.#early;
    this.#early = undefined;
    this.#earlyBytes = 0;
    if (early !== undefined) this.pushData(early.length === 1 ? early[0]! : Buffer.concat(early), true);
    // A sink that let go while early events were replayed (readHead) leaves the rest kept.
    if (this.#sink !== sink) return;
    if (this.#outcome !== undefined) this.#finish(this.#outcome);
    else if (this.#earlyPaused) {
      this.#earlyPaused = false;
      this.#transport.resume();
    }
  }

  pause(): void {
    // A consumer's pause stands: consume() does not lift it after replaying early events.
    this.#earlyPaused = false;
    this.#transport.pause();
  }

  resume(): void {
    this.#transport.resume();
  }

  /** Stops the upstream response; the sink gets `onError(reason)` unless the body already ended. */
  abort(reason: Error = upstreamAbortError()): void {
    if (this.#done || this.#outcome !== undefined) return;
    this.#transport.abort(reason);
  }

  /**
   * Reads the body until it ends or goes past `limit` bytes. In the second case reading stops
   * there and the reply is left to `rest`, which sends the rest after what the caller makes of
   * the head. Rejects when the body breaks off within the limit.
   */
  readHead(limit: number): Promise<ReplyHead> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const head = () => (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      this.consume({
        onData: (chunk) => {
          if (kept + chunk.length <= limit) {
            chunks.push(chunk);
            kept += chunk.length;
            return;
          }
          chunks.push(chunk.subarray(0, limit - kept));
          // Detached: what follows is kept as for a sink not yet attached, until rest() takes it.
          this.#sink = undefined;
          this.pushData(chunk.subarray(limit - kept));
          resolve({ head: head(), rest: (headers, first, map) => this.#continued(headers, first, map) });
        },
        onEnd: () => resolve({ head: head(), rest: undefined }),
        onError: reject,
      });
    });
  }

  /**
   * A reply with this status and `headers` whose body is this one's through `map`, on the same
   * transport (pause, resume and abort act on it). This reply is consumed by it.
   */
  mapped(headers: HeaderMap, map: BodyMap): UpstreamReply {
    return this.#continued(headers, undefined, map);
  }

  #continued(headers: HeaderMap, first: Buffer | undefined, map: BodyMap | undefined): UpstreamReply {
    const next = new UpstreamReply(this.status, headers, this.#transport);
    const push = (chunk: Buffer | undefined) => {
      if (chunk !== undefined && chunk.length > 0) next.pushData(chunk);
    };
    push(first);
    // A pause this reply made is now the next one's to lift, once it is consumed.
    if (this.#earlyPaused) {
      this.#earlyPaused = false;
      next.#earlyPaused = true;
    }
    this.consume({
      onData: (chunk) => push(map === undefined ? chunk : map.data(chunk)),
      onEnd: () => {
        push(map?.end());
        next.pushEnd();
      },
      onError: (error) => next.pushError(error),
    });
    return next;
  }

  /** The body as a Readable, for callers that want stream semantics (pipes, async iteration). */
  toReadable(): Readable {
    const readable = new Readable({
      read: () => this.resume(),
      destroy: (error, callback) => {
        this.abort(error ?? upstreamAbortError());
        callback(error);
      },
    });
    this.consume({
      onData: (chunk) => {
        if (!readable.push(chunk)) this.pause();
      },
      onEnd: () => readable.push(null),
      onError: (error) => readable.destroy(error),
    });
    return readable;
  }

  /** @internal transport side; `now` hands the chunk over at once instead of with the rest of the turn. */
  pushData(chunk: Buffer, now = false): void {
    if (this.#sink !== undefined) {
      if (now) return this.#sink.onData(chunk);
      (this.#turn ??= []).push(chunk);
      if (!this.#turnScheduled) {
        this.#turnScheduled = true;
        queueMicrotask(() => this.deliverTurn());
      }
      return;
    }
    (this.#early ??= []).push(chunk);
    this.#earlyBytes += chunk.length;
    if (this.#earlyBytes > EARLY_BUFFER_BYTES && !this.#earlyPaused) {
      this.#earlyPaused = true;
      this.#transport.pause();
    }
  }

  /** @internal transport side */
  pushEnd(): void {
    this.#outcome ??= 'end';
    if (this.#sink !== undefined) this.#finish('end');
  }

  /** @internal transport side */
  pushError(error: Error): void {
    this.#outcome ??= error;
    if (this.#sink !== undefined) this.#finish(error);
  }

  /** @internal Hands the chunks of this turn to the sink as one (scheduled by pushData). */
  deliverTurn(): void {
    this.#turnScheduled = false;
    const chunks = this.#turn;
    if (chunks === undefined || chunks.length === 0) return;
    this.#turn = undefined;
    this.pushData(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), true);
  }

  #finish(outcome: 'end' | Error): void {
    if (this.#done) return;
    this.deliverTurn();
    // A sink that let go while the turn's chunks were handed over (readHead) finishes later, with the rest.
    if (this.#sink === undefined) return;
    this.#done = true;
    if (outcome === 'end') this.#sink!.onEnd();
    else this.#sink!.onError(outcome);
  }
}

/** The error an aborted exchange ends with (classified as `aborted`). */
export function upstreamAbortError(): Error {
  return Object.assign(new Error('The upstream request was aborted.'), { name: 'AbortError', code: 'UND_ERR_ABORTED' });
}
