import { JsonArrayStreamSplitter, UTF8_BOM, jsonArrayStreamErrorTail } from '../../streaming/index.ts';
import type { UpstreamBodySink } from '../../upstream/index.ts';
import { BodyRelay } from './relay-body.ts';
import { SniffedStreamRelay } from './relay-sniffed-stream.ts';
import { SseRelay } from './relay-sse.ts';
import { streamFailureOf } from './stream-failure-of.ts';
import { MAX_HELD_EVENT_BYTES, StreamRelay } from './stream-relay.ts';

const OPEN_BRACKET = 0x5b;

/**
 * A stream framed as one JSON array: passed on byte for byte, each read's whole elements in one
 * write, with usage read from the elements, and an element that is an error object recorded
 * as the upstream's error. The bytes of an element not yet whole are held (like the SSE
 * relay's half events), so that a stall or break always finds the array at a place where an
 * error element and `]` close it validly; an element too large to hold is passed on as it
 * comes, and a failure inside it can only end the connection. An array that ends before its
 * `]` is a break (after the upstream's own error element, closed as one but recorded as the
 * upstream's error); a stall or break after its `]` ends nothing the client still needs.
 * A body whose first byte past whitespace is not `[` is no array: its first bytes decide, as a
 * sniffed answer's do. An event stream (an `alt=sse` stream typed as JSON) goes to the SSE
 * relay; anything else is an answer as to a non-streamed request and goes to a BodyRelay, as
 * sent, its usage read as that body's.
 */
export class JsonArrayRelay extends StreamRelay {
  readonly #splitter = new JsonArrayStreamSplitter(MAX_HELD_EVENT_BYTES);
  /** Bytes after the last place the array can be cut at: part of an element not yet whole. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** Part of an element too large to hold was passed on; its rest goes on as it arrives. */
  #passingLargeElement = false;
  /** The body's first byte past whitespace was seen. */
  #framingKnown = false;
  /** Bytes of a BOM the body opens with, seen so far; UTF8_BOM.length once past where one may stand. */
  #bomBytes = 0;
  /** Relays a body that is no array, once its first byte past whitespace said so. */
  #plainBody: UpstreamBodySink | undefined;

  onData(chunk: Buffer): void {
    if (this.#plainBody !== undefined) return this.#plainBody.onData(chunk);
    if (!this.#framingKnown && this.#opensPlainBody(chunk)) return this.#relayAsBody(chunk);
    this.idle.touch();
    const elements = this.#splitter.push(chunk);
    if (this.usage !== undefined) for (const element of elements) this.usage.push(element);
    const cut = this.#splitter.cut;
    if (cut === -1) return this.#hold(chunk);
    this.#passingLargeElement = false;
    const whole = cut === chunk.length ? chunk : chunk.subarray(0, cut);
    if (this.#held.length > 0) this.#held.push(whole);
    const out = this.#held.length === 0 ? whole : Buffer.concat(this.#held, this.#heldBytes + whole.length);
    const error = this.upstreamErrors === undefined ? -1 : this.#upstreamErrorIn(out, elements);
    if (error === -1) this.#passOn(out);
    else {
      // The elements before the upstream's error element go as they are; it and all after it masked.
      if (error > 0) this.#passOn(out.subarray(0, error));
      this.upstreamErrorSeen();
      this.#passOn(error > 0 ? out.subarray(error) : out);
    }
    this.#held = [];
    this.#heldBytes = 0;
    if (cut < chunk.length) this.#hold(chunk.subarray(cut));
  }

  override onEnd(): void {
    if (this.#plainBody !== undefined) this.#plainBody.onEnd();
    else super.onEnd();
  }

  override onError(error: Error): void {
    if (this.#plainBody !== undefined) this.#plainBody.onError(error);
    else super.onError(error);
  }

  // The upstream may have left an element whole but for its comma or `]`: read before the end is judged, as it may be the upstream's error.
  protected endCleanly(): void {
    this.readHeld();
  }

  // Cut off before its `]`, the array is not valid JSON.
  protected owesEnd(): boolean {
    return true;
  }

  // Its error element and `]`, as after a break: the client can then parse the array.
  protected override closeAfterUpstreamError(): void {
    this.writeFailure('upstream_stream_broken');
  }

  // An element is only handed over at the comma or `]` after it; one the client got whole before a stall or break still counts.
  protected override readHeld(): void {
    const element = this.#splitter.takeWhole();
    if (element === undefined) return;
    // Its bytes went on at its closing bracket: were it an error, #upstreamErrorIn found it then.
    this.usage?.push(element);
  }

  protected override completed(): boolean {
    return this.#splitter.boundaryAtCut() === 'closed';
  }

  protected writeFailure(code: string): void {
    // Nothing valid can follow part of an element.
    if (this.#passingLargeElement) return void this.relay.res.destroy();
    const at = this.#splitter.boundaryAtCut();
    this.relay.write(`${at === 'before_open' ? '[' : ''}${jsonArrayStreamErrorTail(streamFailureOf(code), at === 'after_element' ? 1 : 0)}`);
  }

  /** Whether this chunk has the body's first byte past a BOM and JSON whitespace, and it is not `[`. */
  #opensPlainBody(chunk: Buffer): boolean {
    for (const c of chunk) {
      // A BOM is skipped as the SSE sniffing skips it; the splitter passes over it to the `[`.
      if (this.#bomBytes < UTF8_BOM.length) {
        if (c === UTF8_BOM[this.#bomBytes]) {
          this.#bomBytes++;
          continue;
        }
        if (this.#bomBytes > 0) {
          // Half a BOM opens no array.
          this.#framingKnown = true;
          return true;
        }
        this.#bomBytes = UTF8_BOM.length;
      }
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
      this.#framingKnown = true;
      return c !== OPEN_BRACKET;
    }
    return false;
  }

  /** Hands the body over to the sink its first bytes choose: the whitespace held so far, then `chunk`. */
  #relayAsBody(chunk: Buffer): void {
    const { relay } = this;
    const done = this.leaveToBody();
    const body = (this.#plainBody = new SniffedStreamRelay((sse) => (sse ? new SseRelay(relay, done) : new BodyRelay(relay, true, done))));
    for (const held of this.#held) body.onData(held);
    this.#held = [];
    this.#heldBytes = 0;
    body.onData(chunk);
  }

  #hold(bytes: Buffer): void {
    if (this.#passingLargeElement) return this.#passOn(bytes);
    this.#held.push(bytes);
    this.#heldBytes += bytes.length;
    if (this.#heldBytes <= MAX_HELD_EVENT_BYTES) return;
    this.#passingLargeElement = true;
    const held = Buffer.concat(this.#held);
    this.#held = [];
    this.#heldBytes = 0;
    this.#passOn(held);
  }

  #passOn(bytes: Buffer): void {
    if (this.relay.clientOpen) this.relay.write(bytes);
  }

  /**
   * Where in `bytes` (a read's whole elements, about to be passed on) the upstream's own error
   * element starts; -1 when none is. An element's bytes go on once its closing bracket came,
   * before the comma or `]` that hands it over: one still held whole (the splitter's) is looked
   * into with those handed over, so that an error element is found before its bytes go on.
   */
  #upstreamErrorIn(bytes: Buffer, elements: readonly string[]): number {
    const errors = this.upstreamErrors!;
    if (errors.candidateIn(bytes) === -1) return -1;
    const held = this.#splitter.peekWhole();
    for (const element of held === undefined ? elements : [...elements, held]) {
      if (!errors.isErrorData(element)) continue;
      const at = bytes.indexOf(element);
      // Not found: text the bytes did not decode to; then all of them are masked.
      return at === -1 ? 0 : at;
    }
    return -1;
  }
}
