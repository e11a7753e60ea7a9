import type { Transform } from 'node:stream';
import type { HeaderMap } from '../../upstream/index.ts';
import { decodedWithin, decodingStages } from '../decode-reply-body.ts';
import { BodyRelay } from './relay-body.ts';
import type { RelayContext } from './relay-context.ts';

/**
 * A plain JSON answer compressed although the gateway asked for identity, in a coding it
 * decodes: the client gets the bytes as sent, with their `content-encoding`, and the decoded
 * body goes to BodyRelay's usage capture (bounded as for any body). A body within the capture
 * limit is kept compressed and decoded whole at its end, so that its outcome comes at once, as
 * an uncompressed one's; past it, a side decoder decodes it as it arrives, and the outcome waits
 * for the decoder's end. A body that does not decode leaves its usage unread. One in place of a
 * stream (BodyRelay's holding) is held to its end within the capture limit, and goes decoded
 * and masked when it is an error object.
 */
export class CompressedBodyRelay extends BodyRelay {
  readonly #relay: RelayContext;
  readonly #headers: HeaderMap;
  /** The body as it came, until it passes the capture limit. */
  #compressed: Buffer[] | undefined = [];
  #compressedBytes = 0;
  /** Past the capture limit: the side decoder's stages, in the order they are piped. */
  #stages: Transform[] | undefined;
  /** The outcome is out, or goes without the decoder: nothing more is read from it. */
  #settled = false;
  #decodeFailed = false;
  #upstreamEnded = false;

  constructor(relay: RelayContext, headers: HeaderMap, done: () => void) {
    super(relay, true, done);
    this.#relay = relay;
    this.#headers = headers;
  }

  override onData(chunk: Buffer): void {
    const relay = this.#relay;
    const compressed = this.#compressed;
    if (compressed !== undefined) {
      compressed.push(chunk);
      this.#compressedBytes += chunk.length;
      if (this.#compressedBytes <= relay.options.captureLimitBytes) {
        if (this.holding) return this.watchHeld();
      } else {
        this.#startDecoder(compressed);
        // Past the limit a held body is no error object: what was held goes on, and the rest as it comes.
        if (this.holding) return this.#passOnAsSent(compressed);
      }
    } else if (!this.#decodeFailed && !this.#stages![0]!.write(chunk)) relay.reply.pause();
    if (relay.clientOpen) relay.write(chunk);
  }

  override onEnd(): void {
    this.#upstreamEnded = true;
    const compressed = this.#compressed;
    if (compressed !== undefined) {
      const body = compressed.length === 1 ? compressed[0]! : Buffer.concat(compressed);
      const decoded = decodedWithin(this.#headers, body, this.#relay.options.captureLimitBytes);
      if (this.holding && body.length > 0) this.passOnHeld(body, typeof decoded === 'string' ? undefined : decoded);
      this.endClient();
      if (decoded === 'over_limit') {
        this.#startDecoder([body]).end();
        return;
      }
      if (decoded !== undefined) this.keep(decoded);
      return this.#settle(decoded !== undefined);
    }
    this.endClient();
    if (this.#decodeFailed) this.#settle(false);
    else this.#stages![0]!.end();
  }

  override onError(error: Error): void {
    this.#stop();
    super.onError(error);
  }

  /** Decodes `kept` and what follows as it arrives; returns the first stage, to write to. */
  #startDecoder(kept: Buffer[]): Transform {
    const relay = this.#relay;
    const stages = decodingStages(this.#headers);
    this.#stages = stages;
    this.#compressed = undefined;
    const first = stages[0]!;
    const last = stages[stages.length - 1]!;
    for (const stage of stages) stage.on('error', () => this.#decodingFailed());
    last.on('data', (chunk: Buffer) => this.keep(chunk));
    last.on('end', () => this.#settle(true));
    // Decoding is slower than the upstream: it waits as for a slow client (unless the client holds it).
    first.on('drain', () => {
      if (!relay.res.writableNeedDrain) relay.reply.resume();
    });
    stages.reduce((from, to) => from.pipe(to));
    for (const chunk of kept) first.write(chunk);
    return first;
  }

  #passOnAsSent(held: Buffer[]): void {
    this.holding = false;
    const relay = this.#relay;
    for (const chunk of held) if (relay.clientOpen) relay.write(chunk);
  }

  /** The bytes are not what their content-encoding says: they still go to the client as sent. */
  #decodingFailed(): void {
    if (this.#settled) return;
    // Failed at the end (a body cut short): the outcome waits for nothing more.
    if (this.#upstreamEnded) return this.#settle(false);
    this.#decodeFailed = true;
    for (const stage of this.#stages!) stage.destroy();
    // A body that is still arriving may have been paused for the decoder.
    if (!this.#relay.res.writableNeedDrain) this.#relay.reply.resume();
  }

  #settle(decoded: boolean): void {
    if (this.#settled) return;
    this.#stop();
    if (decoded) this.readKept();
    this.done();
  }

  #stop(): void {
    this.#settled = true;
    this.#compressed = undefined;
    for (const stage of this.#stages ?? []) stage.destroy();
  }
}
