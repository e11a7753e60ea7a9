import type { Socket } from 'node:net';

/** Told when the client's connection closes. */
interface ClientWatcher {
  clientGone(): void;
}

/**
 * The watchers of one connection. Requests on a connection nearly always come one at a time,
 * so the first watcher has a slot of its own and only overlapping ones (pipelined requests)
 * go to a set: a set that every request joins and leaves resizes its table as it does, which
 * allocated about 115 bytes per request.
 */
class ConnectionWatchers {
  #first: ClientWatcher | undefined;
  #more: Set<ClientWatcher> | undefined;

  constructor(socket: Socket) {
    socket.once('close', () => this.#closed());
  }

  add(watcher: ClientWatcher): void {
    if (this.#first === undefined) this.#first = watcher;
    else (this.#more ??= new Set()).add(watcher);
  }

  delete(watcher: ClientWatcher): void {
    if (this.#first === watcher) this.#first = undefined;
    else this.#more?.delete(watcher);
  }

  #closed(): void {
    const first = this.#first;
    const more = this.#more;
    this.#first = undefined;
    this.#more = undefined;
    first?.clientGone();
    if (more !== undefined) for (const watcher of more) watcher.clientGone();
  }
}

/** Kept beside the sockets rather than on them: a property added to a socket would change its shape under node's own code. */
const watchersOf = new WeakMap<Socket, ConnectionWatchers>();

/**
 * The watchers of a connection, made with its one 'close' listener the first time. One
 * listener per connection serves every request on it, rather than a listener added to and
 * removed from every response (measured between nothing and 0.06 of the floor's throughput in
 * interleaved bench runs) for an event that almost never fires. As with a response's 'close',
 * a connection that has closed already is not reported; callers check `destroyed` where it
 * matters.
 */
function connectionWatchers(socket: Socket): ConnectionWatchers {
  let watchers = watchersOf.get(socket);
  if (watchers === undefined) {
    watchers = new ConnectionWatchers(socket);
    watchersOf.set(socket, watchers);
  }
  return watchers;
}

/**
 * One request's watch on its client, for the whole request: `point` says what the client
 * leaving means now (calling the upstream request off while waiting for its answer, ending the
 * relay while relaying; undefined: nothing), so that phases change a pointer, not listeners.
 */
export class RequestWatch implements ClientWatcher {
  readonly #connection: ConnectionWatchers;
  #onGone: (() => void) | undefined;
  #gone = false;
  /**
   * Also the relay's DeliveryOptions.onClientGone. A client that left while nothing was pointed
   * at (between two phases, such as a credential's verdict being written) is told to the next
   * handler, once the caller's synchronous setup is done.
   */
  readonly point = (handler: (() => void) | undefined): void => {
    this.#onGone = handler;
    if (this.#gone && handler !== undefined) queueMicrotask(() => this.#onGone?.());
  };

  constructor(socket: Socket) {
    this.#connection = connectionWatchers(socket);
    this.#connection.add(this);
  }

  clientGone(): void {
    this.#gone = true;
    this.#onGone?.();
  }

  stop(): void {
    this.#connection.delete(this);
  }
}
