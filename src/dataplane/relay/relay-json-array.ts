import { JsonArrayStreamSplitter, jsonArrayStreamErrorTail } from '../../streaming/index.ts';
import { streamFailureOf } from './stream-failure-of.ts';
import { StreamRelay } from './stream-relay.ts';

/**
 * A stream framed as one JSON array: passed on byte for byte as it arrives, with usage read
 * from its elements, and an element that is an error object recorded as the upstream's error. A stall or break closes the array with an error element when the stream
 * stands between elements; inside an element nothing valid can follow, so the response ends.
 */
export class JsonArrayRelay extends StreamRelay {
  readonly #splitter = new JsonArrayStreamSplitter();

  onData(chunk: Buffer): void {
    this.idle.touch();
    for (const element of this.#splitter.push(chunk)) this.#inspect(element);
    if (this.relay.clientOpen) this.relay.write(chunk);
  }

  protected endCleanly(): void {
    for (const element of this.#splitter.end()) this.#inspect(element);
  }

  // An element is only handed over at the comma or `]` after it; one the client got whole before a stall or break still counts.
  protected override readHeld(): void {
    const element = this.#splitter.takeWhole();
    if (element !== undefined) this.#inspect(element);
  }

  #inspect(element: string): void {
    this.usage?.push(element);
    const errors = this.upstreamErrors;
    if (errors !== undefined && errors.mayHold(element) && errors.isErrorData(element)) this.upstreamErrorSeen();
  }

  protected writeFailure(code: string): void {
    const at = this.#splitter.boundary();
    if (at === 'inside_element' || at === 'closed') this.relay.res.destroy();
    else this.relay.write(`${at === 'before_open' ? '[' : ''}${jsonArrayStreamErrorTail(streamFailureOf(code), at === 'after_element' ? 1 : 0)}`);
  }
}
