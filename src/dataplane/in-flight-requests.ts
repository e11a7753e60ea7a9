import type { RelayContext } from './relay/relay-context.ts';

/** Longest a shutdown waits for the requests it ended to write their answers. */
const END_WAIT_MS = 1000;

/**
 * The data plane's requests in flight, so that a shutdown whose grace ran out can end each
 * one in its protocol, as the gateway's own answer, rather than leave the client a cut
 * connection: a stream with its protocol's error event (as an idle upstream's is), a request
 * still waiting for its upstream with a 503 error body.
 */
export class InFlightRequests {
  readonly #streams = new Set<RelayContext>();
  readonly #waiting = new Set<{ abort(): void }>();
  #running = 0;
  #settled: (() => void)[] = [];
  #ended = false;

  /** True once `endAll` was called: the server is about to cut every connection still open. */
  get ended(): boolean {
    return this.#ended;
  }

  /** A request's handler started; `leave` once it has answered (or failed to). */
  enter(): void {
    this.#running++;
  }

  leave(): void {
    if (--this.#running > 0) return;
    for (const resolve of this.#settled.splice(0)) resolve();
  }

  /**
   * Resolves once no handler is running. A handler can outlive its connection (a client that
   * left, a connection the shutdown cut), and still has its log record to write.
   */
  settled(): Promise<void> {
    if (this.#running === 0) return Promise.resolve();
    return new Promise((resolve) => this.#settled.push(resolve));
  }

  addStream(relay: RelayContext): void {
    this.#streams.add(relay);
  }

  deleteStream(relay: RelayContext): void {
    this.#streams.delete(relay);
  }

  /** An upstream exchange whose reply the request waits for; one started after `endAll` is aborted at once. */
  addWaiting(exchange: { abort(): void }): void {
    if (this.#ended) exchange.abort();
    else this.#waiting.add(exchange);
  }

  deleteWaiting(exchange: { abort(): void }): void {
    this.#waiting.delete(exchange);
  }

  /**
   * Ends every stream with `code` and aborts every exchange still waiting for its reply (whose
   * request then answers `code` itself); resolves once every handler has answered, or after a second.
   */
  endAll(code: string): Promise<void> {
    this.#ended = true;
    for (const relay of this.#streams) {
      relay.fail(code);
      relay.reply.abort();
    }
    for (const exchange of this.#waiting) exchange.abort();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, END_WAIT_MS)));
    return Promise.race([this.settled(), waited]).finally(() => clearTimeout(timer));
  }
}
