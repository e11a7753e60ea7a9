import type { RelayContext } from './relay-context.ts';

/** Longest a shutdown waits for the streams it ended to write their error events. */
const END_WAIT_MS = 1000;

/**
 * The streams being relayed, so that a shutdown whose grace ran out can end each with its
 * protocol's error event (as an idle upstream does) rather than leave the client a cut
 * connection.
 */
export class ActiveStreams {
  readonly #relays = new Set<RelayContext>();
  #emptied: (() => void) | undefined;
  #ended = false;

  /** True once `endAll` was called: the server is about to cut every connection still open. */
  get ended(): boolean {
    return this.#ended;
  }

  add(relay: RelayContext): void {
    this.#relays.add(relay);
  }

  delete(relay: RelayContext): void {
    if (this.#relays.delete(relay) && this.#relays.size === 0) this.#emptied?.();
  }

  /** Ends every stream with `code`; resolves once each has written its ending, or after a second. */
  endAll(code: string): Promise<void> {
    this.#ended = true;
    if (this.#relays.size === 0) return Promise.resolve();
    const emptied = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, END_WAIT_MS);
      this.#emptied = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    for (const relay of this.#relays) {
      relay.fail(code);
      relay.reply.abort();
    }
    return emptied;
  }
}
