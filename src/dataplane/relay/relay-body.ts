import { UPSTREAM_STREAM_ERROR, withoutBom } from '../../streaming/index.ts';
import { extractUsage, extractUsageFromBytes, extractUsageFromHead, extractUsageFromTail, type TokenUsage } from '../../usage/index.ts';
import { classifyUpstreamError, type UpstreamBodySink } from '../../upstream/index.ts';
import { maskSecretInBytes } from '../mask-upstream-secret.ts';
import { idOf, parseOrUndefined } from './id-of.ts';
import type { RelayContext } from './relay-context.ts';
import { watchUpstreamIdle } from './stream-failure-of.ts';

/** How much of a body past the capture limit is kept: its usage member is mostly last, and small. */
const USAGE_TAIL_BYTES = 64 * 1024;
/**
 * How much of such a body's head is read for a usage member before the rest: one that comes
 * first is near the start, and a large body's head (an image's base64) is not scanned whole.
 */
const USAGE_HEAD_BYTES = 64 * 1024;

/**
 * Any other body, passed on chunk by chunk. A JSON body up to the capture limit is also kept
 * aside and parsed once the client has it all, for usage and the created response's id. Past
 * the limit (an image's base64 before the usage) only its last bytes are kept, for usage; the
 * head is read once as it passes the limit, for a usage member before the rest (Jina-style
 * embeddings).
 */
export class BodyRelay implements UpstreamBodySink {
  readonly #relay: RelayContext;
  protected readonly done: () => void;
  #kept: Buffer[] | undefined;
  #keptBytes = 0;
  /** Past the capture limit: #kept holds the body's tail only. */
  #tailOnly = false;
  /** Past the capture limit: the top-level usage member found in the head, if any. */
  #headUsage: TokenUsage | undefined;
  /**
   * A stream request answered 2xx with JSON: the body is held (in #kept, a compressed one in
   * CompressedBodyRelay's) and passed on at its end, as only then is it known whether it is an
   * error object, whose secret is masked. A body past the capture limit is no such error, and
   * goes on as it arrives from then.
   */
  protected holding: boolean;
  /** The held body as passOnHeld parsed it and its verdict, for readKept (made only for a body held to its end). */
  #held: { parsed: unknown; isError: boolean } | undefined;

  constructor(relay: RelayContext, isJson: boolean, done: () => void) {
    this.#relay = relay;
    this.done = done;
    if (isJson) this.#kept = [];
    this.holding = isJson && relay.options.streamRequested === true && relay.reply.status < 300 && relay.secret !== undefined;
    // No watcher for an answer read in one turn: one only for a body still open after it (RelayContext.flush).
    relay.watchesAfterFirstTurn = true;
    if (isJson && relay.options.usageStyle !== undefined && relay.reply.status < 300) relay.usageRelay = this;
  }

  /**
   * A plain answer is whole at the upstream before it is sent (and billed in full): once its
   * body began to reach the client, a client leaving need not stop the rest, which carries the
   * usage. One that leaves before is recorded 499 and stops it at once.
   */
  awaitsOnlyUsage(): boolean {
    return this.#relay.started;
  }

  onData(chunk: Buffer): void {
    if (this.holding) return this.#hold(chunk);
    this.keep(chunk);
    if (this.#relay.clientOpen) this.#relay.write(chunk);
  }

  onEnd(): void {
    if (this.holding && this.#kept!.length > 0) {
      const body = wholeOf(this.#kept!);
      this.passOnHeld(body, body);
    }
    this.endClient();
    this.readKept();
    this.done();
  }

  #hold(chunk: Buffer): void {
    const relay = this.#relay;
    this.watchHeld();
    const kept = this.#kept!;
    kept.push(chunk);
    this.#keptBytes += chunk.length;
    if (this.#keptBytes <= relay.options.captureLimitBytes) return;
    this.holding = false;
    this.#kept = [];
    this.#keptBytes = 0;
    for (const held of kept) this.onData(held);
  }

  /** Nothing is flushed while held, which would make the watcher (RelayContext.flush): one that stalls is still ended at the idle timeout. */
  protected watchHeld(): void {
    const relay = this.#relay;
    (relay.idle ??= watchUpstreamIdle(relay)).touch();
  }

  /**
   * The held body, whole (`sent`, as it came; `decoded`, what it decodes to, undefined when it
   * does not decode within the capture limit): an error object goes with the secret masked and
   * its length the masked one's (decoded, when it came compressed), anything else as sent.
   */
  protected passOnHeld(sent: Buffer, decoded: Buffer | undefined): void {
    const relay = this.#relay;
    let out = sent;
    if (decoded !== undefined) {
      const parsed = parseOrUndefined(withoutBom(decoded.toString('utf8')));
      const isError = holdsError(parsed);
      this.#held = { parsed, isError };
      if (isError) {
        out = maskSecretInBytes(decoded, relay.secret!);
        relay.resizeHeldBody(out.length, decoded !== sent);
      }
    }
    if (relay.clientOpen) relay.write(out);
  }

  /** Keeps `chunk` of the body read for usage: all of it up to the capture limit, past it the tail. */
  protected keep(chunk: Buffer): void {
    const kept = this.#kept;
    if (kept === undefined) return;
    kept.push(chunk);
    this.#keptBytes += chunk.length;
    if (this.#tailOnly) this.#trimToTail(kept);
    else if (this.#keptBytes > this.#relay.options.captureLimitBytes) this.#passLimit(kept);
  }

  /** The body passes the capture limit: its head is read for usage once, then let go. */
  #passLimit(kept: Buffer[]): void {
    const { usageStyle } = this.#relay.options;
    if (usageStyle) this.#headUsage = extractUsageFromHead(usageStyle, headOf(kept, USAGE_HEAD_BYTES));
    this.#trimToTail(kept);
  }

  protected endClient(): void {
    const relay = this.#relay;
    relay.idle?.stop();
    relay.markFirstByte();
    relay.end();
  }

  /** Reads usage (and a created response's id) from what keep kept. */
  protected readKept(): void {
    const relay = this.#relay;
    const kept = this.#kept;
    const { usageStyle, captureResponseId } = relay.options;
    if (kept !== undefined && kept.length > 0 && this.#tailOnly) {
      // A usage member in the tail is the last one, as JSON.parse would read it.
      if (usageStyle) relay.outcome.usage = extractUsageFromTail(usageStyle, this.#tail(kept)) ?? this.#headUsage;
    } else if (kept !== undefined && kept.length > 0) {
      // A stream request answered with one JSON object (rare, and small when it is an error).
      const inPlaceOfStream = relay.options.streamRequested === true && relay.reply.status < 300;
      if (captureResponseId || inPlaceOfStream) {
        // The created response's id is a member near the start: this body is parsed whole (past a
        // BOM, which JSON.parse refuses where the byte scan of other bodies passes over it), once:
        // a body held to its end was parsed then.
        const held = this.#held;
        const parsed = held !== undefined ? held.parsed : parseOrUndefined(withoutBom(wholeOf(kept).toString('utf8')));
        if (usageStyle && parsed !== undefined) relay.outcome.usage = extractUsage(usageStyle, parsed);
        if (captureResponseId) relay.outcome.responseId = idOf(parsed);
        // An error object in place of the stream is the upstream's error, as its error event in a stream is.
        if (inPlaceOfStream && (held !== undefined ? held.isError : holdsError(parsed))) relay.fail(UPSTREAM_STREAM_ERROR);
      } else if (usageStyle) {
        relay.outcome.usage = extractUsageFromBytes(usageStyle, wholeOf(kept));
      }
    }
  }

  onError(error: Error): void {
    this.#relay.idle?.stop();
    // The idle watcher ended it (upstream_idle_timeout, client_stalled): already recorded, and
    // the code a body held for its end (#hold) is answered with. The
    // shutdown's grace ran out and cut the body: the gateway stopped it, not the upstream. A body
    // that went silent past undici's body timeout (one silent before its first bytes, which no
    // watcher watches) is the upstream's stall, not a break. Before its first byte (its head
    // still held) it is answered with the gateway's HTTP error; after, a plain body cannot carry
    // an error event: the client's connection is cut.
    const relay = this.#relay;
    const code = relay.outcome.streamFailure ?? (relay.options.inFlight?.ended ? 'shutting_down' : classifyUpstreamError(error).kind === 'body_timeout' ? 'upstream_idle_timeout' : 'upstream_stream_broken');
    relay.fail(code);
    if (relay.outcome.streamFailure !== code || !relay.answerFailure(code)) relay.res.destroy();
    this.done();
  }

  /** Drops the leading chunks the last USAGE_TAIL_BYTES do not need (references only, no copy). */
  #trimToTail(kept: Buffer[]): void {
    this.#tailOnly = true;
    let drop = 0;
    let bytes = this.#keptBytes;
    while (drop < kept.length - 1 && bytes - kept[drop]!.length >= USAGE_TAIL_BYTES) bytes -= kept[drop++]!.length;
    if (drop > 0) kept.splice(0, drop);
    this.#keptBytes = bytes;
  }

  /** The last USAGE_TAIL_BYTES (or fewer) of the body: only that much is copied. */
  #tail(kept: Buffer[]): Buffer {
    const first = kept[0]!;
    const extra = Math.max(0, this.#keptBytes - USAGE_TAIL_BYTES);
    if (kept.length === 1) return first.subarray(extra);
    kept[0] = first.subarray(extra);
    return Buffer.concat(kept, this.#keptBytes - extra);
  }
}

/** A JSON object whose top-level `error` is an object (`"error": null` is a success's). */
function holdsError(parsed: unknown): boolean {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
  const { error } = parsed as { error?: unknown };
  return error !== null && typeof error === 'object';
}

/** The chunks as one buffer, copied only when there are several. */
function wholeOf(chunks: readonly Buffer[]): Buffer {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** The first `bytes` of the chunks (all of them when shorter), copied only when they span several. */
function headOf(chunks: readonly Buffer[], bytes: number): Buffer {
  const first = chunks[0]!;
  if (first.length >= bytes) return first.subarray(0, bytes);
  const parts: Buffer[] = [];
  let length = 0;
  for (const chunk of chunks) {
    parts.push(chunk);
    length += chunk.length;
    if (length >= bytes) break;
  }
  return Buffer.concat(parts, Math.min(length, bytes));
}
