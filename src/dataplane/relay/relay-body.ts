import { extractUsage, extractUsageFromBytes } from '../../usage/index.ts';
import type { UpstreamBodySink } from '../../upstream/index.ts';
import { idOf, parseOrUndefined } from './id-of.ts';
import type { RelayContext } from './relay-context.ts';

/**
 * Any other body, passed on chunk by chunk. A JSON body up to the capture limit is also kept
 * aside and parsed once the client has it all, for usage and the created response's id.
 */
export class BodyRelay implements UpstreamBodySink {
  readonly #relay: RelayContext;
  readonly #done: () => void;
  #kept: Buffer[] | undefined;
  #keptBytes = 0;

  constructor(relay: RelayContext, isJson: boolean, done: () => void) {
    this.#relay = relay;
    this.#done = done;
    if (isJson) this.#kept = [];
  }

  onData(chunk: Buffer): void {
    if (this.#kept !== undefined) {
      this.#keptBytes += chunk.length;
      if (this.#keptBytes <= this.#relay.options.captureLimitBytes) this.#kept.push(chunk);
      else this.#kept = undefined;
    }
    if (this.#relay.clientOpen) this.#relay.write(chunk);
  }

  onEnd(): void {
    const relay = this.#relay;
    relay.markFirstByte();
    relay.end();
    const kept = this.#kept;
    if (kept !== undefined && kept.length > 0) {
      const body = kept.length === 1 ? kept[0]! : Buffer.concat(kept);
      const { usageStyle, captureResponseId } = relay.options;
      if (captureResponseId) {
        // The created response's id is a member near the start: this body is parsed whole.
        const parsed = parseOrUndefined(body.toString('utf8'));
        if (usageStyle && parsed !== undefined) relay.outcome.usage = extractUsage(usageStyle, parsed);
        relay.outcome.responseId = idOf(parsed);
      } else if (usageStyle) {
        relay.outcome.usage = extractUsageFromBytes(usageStyle, body);
      }
    }
    this.#done();
  }

  onError(): void {
    this.#relay.fail('upstream_stream_broken');
    this.#relay.res.destroy();
    this.#done();
  }
}
