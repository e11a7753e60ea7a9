import { opensSseStream } from '../../streaming/index.ts';
import type { UpstreamBodySink } from '../../upstream/index.ts';

/** Held at most this much before the first bytes decide, or the body goes on as a plain one. */
const SNIFF_LIMIT_BYTES = 4096;

/**
 * A successful answer to a stream request whose content type does not say `text/event-stream`
 * (text/plain, application/octet-stream, application/json or none, as some compatible
 * upstreams send their streams): its first bytes past a BOM and whitespace decide how it is
 * relayed. An event stream goes to the SSE relay (its usage read, the usage-only chunk the
 * gateway asked for dropped, stalls and breaks watched), anything else on as a plain body.
 * Bytes are only held until then, usually not past the first read.
 */
export class SniffedStreamRelay implements UpstreamBodySink {
  readonly #relayAs: (sse: boolean) => UpstreamBodySink;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #sink: UpstreamBodySink | undefined;

  /** `relayAs` makes the sink the body goes to once its first bytes tell which it is. */
  constructor(relayAs: (sse: boolean) => UpstreamBodySink) {
    this.#relayAs = relayAs;
  }

  onData(chunk: Buffer): void {
    if (this.#sink !== undefined) return this.#sink.onData(chunk);
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    const sse = opensSseStream(this.#held.length === 1 ? chunk : Buffer.concat(this.#held));
    if (sse !== undefined) this.#decide(sse);
    // Still only whitespace (or a field name's start) past this: no stream opens so, and its
    // head and bytes must not wait on an upstream that trickles newlines.
    else if (this.#heldBytes >= SNIFF_LIMIT_BYTES) this.#decide(false);
  }

  onEnd(): void {
    (this.#sink ?? this.#decide(false)).onEnd();
  }

  onError(error: Error): void {
    (this.#sink ?? this.#decide(false)).onError(error);
  }

  #decide(sse: boolean): UpstreamBodySink {
    const sink = (this.#sink = this.#relayAs(sse));
    const held = this.#held;
    this.#held = [];
    if (held.length > 0) sink.onData(held.length === 1 ? held[0]! : Buffer.concat(held));
    return sink;
  }
}
