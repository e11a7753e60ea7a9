import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { drainingAfterAnswer, lingerBriefly } from '../http/drain-after-answer.ts';

/**
 * Ends keep-alive connections with the requests in flight at shutdown. node:http's close()
 * stops accepting connections, but a client that keeps its connection busy (any SDK under
 * load) is served on it until the grace period cuts everything, requests in flight included.
 * While draining, every answer not yet started says `Connection: close` (node then closes the
 * connection after it), and a connection whose answer already promised keep-alive is closed as
 * soon as that answer ends. One that only reads the rest of a body after its answer (see
 * drainAfterAnswer and lingerOnClose), now or once its answer ends, is half-closed and lingers
 * only briefly (lingerBriefly): node's closeIdleConnections does not count a connection mid-body
 * idle, the client has its answer, and destroying it at once would reset it under a client
 * still writing. So does one answered mid-upload later in the shutdown.
 */
export class ConnectionDrain {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #draining = false;

  constructor(server: Server) {
    this.#server = server;
    server.on('connection', (socket: Socket) => {
      // Given back to the server again after an upgrade it did not take (serveUpgradeAsRequest): tracked already.
      if (this.#sockets.has(socket)) return;
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  /** Called for each request: one that arrives while draining is the last on its connection. */
  admit(res: ServerResponse): void {
    if (this.#draining) res.shouldKeepAlive = false;
  }

  start(): void {
    this.#draining = true;
    for (const socket of this.#sockets) {
      // Where node:http keeps the answer a connection is writing (its own closeIdleConnections reads it too).
      const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      // A connection that has not sent a byte (opened ahead by a pool, a probe) has no request
      // to finish, and node's closeIdleConnections leaves it open until the grace runs out.
      if (!res && socket.bytesRead === 0) {
        socket.destroy();
        continue;
      }
      // Every connection open now, so that one answered mid-upload later lingers briefly too:
      // none opens once the server is closed.
      lingerBriefly(socket);
      if (!res) continue;
      if (!res.headersSent) res.shouldKeepAlive = false;
      // drainAfterAnswer, called before the headers went, listens first: the mark is set by now.
      else res.once('finish', () => (drainingAfterAnswer(socket) ? lingerBriefly(socket) : this.#server.closeIdleConnections()));
    }
    this.#server.closeIdleConnections();
  }
}
