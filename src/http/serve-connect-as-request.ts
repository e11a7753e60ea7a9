import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAnswersInProgress } from './after-answers-in-progress.ts';

/**
 * Answers a CONNECT (what a client set to use the gateway as its HTTPS proxy sends, for
 * `api.openai.com:443`) as the plain request it is to the gateway, which opens no tunnels: node
 * hands it to the 'connect' listener with the bare socket, and with none closes the connection
 * unanswered, leaving the client a reset and the log no record. Here it goes through `serve`
 * like any request (the data plane refuses its target as no endpoint, in the client's error
 * shape, and records it), and the connection ends with the answer, as RFC 9110 §9.3.6 has a
 * client close one whose CONNECT was refused.
 */
export function serveConnectAsRequest(req: IncomingMessage, socket: Duplex, serve: (req: IncomingMessage, res: ServerResponse) => void): void {
  // node dropped its listeners from the socket: a client's reset must not go unheard.
  socket.on('error', ignore);
  // A CONNECT pipelined behind a request still being answered waits for that answer: a socket
  // holds one response at a time (assignSocket throws otherwise).
  afterAnswersInProgress(socket, () => {
    if (socket.destroyed) return;
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once('finish', () => {
      res.detachSocket(socket as Socket);
      (socket as Socket).destroySoon();
    });
    serve(req, res);
  });
}

function ignore(): void {}
