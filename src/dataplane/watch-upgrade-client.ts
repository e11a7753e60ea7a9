import type { Duplex } from 'node:stream';

/**
 * Watches the client of an upgrade request while the gateway reaches the upstream. The HTTP
 * server hands the socket over half-open (`allowHalfOpen`), so a client that leaves shows as
 * the end of its input ('end') rather than a 'close'; either counts. A client sends nothing
 * before it is answered, so its input ends as soon as it leaves.
 */
export class UpgradeClientWatch {
  readonly #socket: Duplex;
  #gone: boolean;
  #onGone: (() => void) | undefined;
  readonly #left = (): void => {
    if (this.#gone) return;
    this.#gone = true;
    this.#onGone?.();
  };

  constructor(socket: Duplex) {
    this.#socket = socket;
    this.#gone = socket.destroyed || socket.readableEnded;
    socket.once('end', this.#left);
    socket.once('close', this.#left);
  }

  get gone(): boolean {
    return this.#gone;
  }

  /** What the client leaving means now (calling the upstream handshake off); undefined: nothing. */
  point(handler: (() => void) | undefined): void {
    this.#onGone = handler;
  }

  stop(): void {
    this.#onGone = undefined;
    this.#socket.off('end', this.#left);
    this.#socket.off('close', this.#left);
  }
}
