import type { Socket } from 'node:net';

/** Kept beside the sockets rather than on them: a property added to a socket would change its shape under node's own code. */
const watchersOf = new WeakMap<Socket, Set<() => void>>();

/**
 * Calls `onGone` when the client's connection closes, until `unwatchClient`. One 'close'
 * listener per connection serves every request on it, rather than a listener added to and
 * removed from every response (measured between nothing and 0.06 of the floor's throughput in
 * interleaved bench runs) for an event that almost never fires. As with a response's 'close',
 * a connection that has closed already is not reported; callers check `destroyed` where it
 * matters.
 */
export function watchClient(socket: Socket, onGone: () => void): void {
  let watchers = watchersOf.get(socket);
  if (watchers === undefined) {
    const all = new Set<() => void>();
    watchers = all;
    watchersOf.set(socket, all);
    socket.once('close', () => {
      for (const watcher of all) watcher();
      all.clear();
    });
  }
  watchers.add(onGone);
}

export function unwatchClient(socket: Socket, onGone: () => void): void {
  watchersOf.get(socket)?.delete(onGone);
}

/**
 * One request's watch on its client, for the whole request: `point` says what the client
 * leaving means now (calling the upstream request off while waiting for its answer, ending the
 * relay while relaying; undefined: nothing), so that phases change a pointer, not listeners.
 */
export class RequestWatch {
  readonly #socket: Socket;
  #onGone: (() => void) | undefined;
  readonly #listener = (): void => this.#onGone?.();
  /** Also the relay's DeliveryOptions.onClientGone. */
  readonly point = (handler: (() => void) | undefined): void => {
    this.#onGone = handler;
  };

  constructor(socket: Socket) {
    this.#socket = socket;
    watchClient(socket, this.#listener);
  }

  stop(): void {
    unwatchClient(this.#socket, this.#listener);
  }
}
