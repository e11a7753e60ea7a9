import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { OutgoingHeaders } from '../upstream/index.ts';

/**
 * Answers a WebSocket upgrade request with a plain HTTP response and closes the connection.
 * Only while nothing has been written to the socket yet; a client that has left gets nothing.
 * The head goes in latin1, as node's writeHead sends one: an upstream's header values are as
 * node's parser read them, a character per byte, and UTF-8 would encode a vendor's UTF-8 twice.
 */
export function answerUpgrade(socket: Duplex, status: number, headers: OutgoingHeaders, body: Buffer): void {
  if (socket.destroyed || !socket.writable) return;
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
  }
  socket.write(`${head}content-length: ${body.length}\r\nconnection: close\r\n\r\n`, 'latin1');
  socket.end(body);
}
