import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAnswersInProgress } from './after-answers-in-progress.ts';

/** What the declined upgrade alone needs: h2c's settings name this connection's HTTP/2 (RFC 7540 §3.2.1). */
const UPGRADE_ONLY = new Set(['upgrade', 'http2-settings']);

/**
 * Serves a request that asks to upgrade its connection to something the gateway does not serve
 * (h2c, which curl --http2 and Java's HttpClient send on http://; a WebSocket one to a path that
 * opens no session) as the HTTP/1.1 request it also is (RFC 9110 §7.8: a server may ignore
 * Upgrade). While the server listens for 'upgrade', node's parser stops at every such request
 * and hands over the socket; node 20 has no way to decline it. So the request goes back to the
 * server as the bytes it came in, less the upgrade, ahead of what followed it (its body, later
 * requests): the server's own parser reads it anew, and the body, keep-alive, timeouts,
 * connection tracking and close work as for any request.
 */
export function serveUpgradeAsRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  // node dropped its listeners from the socket: an error before the server takes it back must not go unheard.
  socket.on('error', ignore);
  afterAnswersInProgress(socket, () => {
    socket.off('error', ignore);
    if (socket.destroyed) return;
    socket.unshift(Buffer.concat([plainRequestHead(req), head]));
    // The keep-alive timeout an answer pipelined ahead set is cleared by the next request only on the connection state that set it, which this replaces.
    (socket as Socket).setTimeout?.(server.timeout);
    // node documents emitting 'connection' to hand a server a connection.
    server.emit('connection', socket);
  });
}

/** The request's head as it came (names, order, values as sent), without Upgrade and what only the upgrade needs. */
function plainRequestHead(req: IncomingMessage): Buffer {
  let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    let value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (UPGRADE_ONLY.has(lower)) continue;
    if (lower === 'connection') {
      value = value
        .split(',')
        .map((token) => token.trim())
        .filter((token) => token !== '' && !UPGRADE_ONLY.has(token.toLowerCase()))
        .join(', ');
      if (value === '') continue;
    }
    head += `${name}: ${value}\r\n`;
  }
  // node reads header bytes as latin1: written back the same way, each byte is as sent.
  return Buffer.from(`${head}\r\n`, 'latin1');
}

function ignore(): void {}
