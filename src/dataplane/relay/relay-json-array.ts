import { JsonArrayStreamSplitter, jsonArrayStreamErrorTail, type IdleWatcher } from '../../streaming/index.ts';
import { StreamUsageAccumulator } from '../../usage/index.ts';
import type { UpstreamBodySink } from '../../upstream/index.ts';
import type { RelayContext } from './relay-context.ts';
import { streamFailureOf, watchUpstreamIdle } from './stream-failure-of.ts';

/**
 * A stream framed as one JSON array: passed on byte for byte as it arrives, with usage read
 * from its elements. A stall or break closes the array with an error element when the stream
 * stands between elements; inside an element nothing valid can follow, so the response ends.
 */
export class JsonArrayRelay implements UpstreamBodySink {
  readonly #relay: RelayContext;
  readonly #splitter = new JsonArrayStreamSplitter();
  readonly #usage: StreamUsageAccumulator | undefined;
  readonly #idle: IdleWatcher;
  readonly #done: () => void;

  constructor(relay: RelayContext, done: () => void) {
    this.#relay = relay;
    this.#done = done;
    const { usageStyle } = relay.options;
    this.#usage = usageStyle ? new StreamUsageAccumulator(usageStyle) : undefined;
    this.#idle = watchUpstreamIdle(relay);
  }

  onData(chunk: Buffer): void {
    this.#idle.touch();
    for (const element of this.#splitter.push(chunk)) this.#usage?.push(element);
    if (this.#relay.clientOpen) this.#relay.write(chunk);
  }

  onEnd(): void {
    this.#idle.stop();
    for (const element of this.#splitter.end()) this.#usage?.push(element);
    this.#finish();
  }

  onError(): void {
    this.#idle.stop();
    this.#relay.fail('upstream_stream_broken');
    this.#finish();
  }

  #finish(): void {
    const relay = this.#relay;
    relay.outcome.usage = this.#usage?.result();
    const failure = relay.outcome.streamFailure;
    if (failure !== undefined && relay.clientOpen) {
      const at = this.#splitter.boundary();
      if (at === 'inside_element' || at === 'closed') relay.res.destroy();
      else relay.res.write(`${at === 'before_open' ? '[' : ''}${jsonArrayStreamErrorTail(streamFailureOf(failure), at === 'after_element' ? 1 : 0)}`);
    }
    this.#done();
  }
}
