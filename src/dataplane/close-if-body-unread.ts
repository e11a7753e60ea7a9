import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { bodyOutstanding } from '../http/body-outstanding.ts';

/** Set on a connection once an answer on it said `connection: close`. */
const CLOSING = Symbol('switchyard.closing');
type MarkedSocket = Socket & { [CLOSING]?: true };

/**
 * Marks an answer `connection: close` when the request's body is still coming (a gateway
 * refusal, an upstream's answer given before it read the whole body): nobody reads the rest,
 * so a kept-alive connection would stall behind it (see bodyOutstanding).
 * The connection is marked too: node still parses a request pipelined behind the refused one,
 * but its answer would never be sent (see connectionClosing).
 */
export function closeIfBodyUnread<H extends Record<string, string | string[]>>(req: IncomingMessage, headers: H): H {
  if (bodyOutstanding(req)) (headers as Record<string, string | string[]>)['connection'] ??= 'close';
  if (headers['connection'] === 'close') (req.socket as MarkedSocket)[CLOSING] = true;
  return headers;
}

/**
 * Whether the gateway already ended this request's connection: a request pipelined behind an
 * answer that said `connection: close` is not served (no upstream call, no record); its client
 * resends it on a new connection. One property read: it runs first on every data-plane request.
 */
export function connectionClosing(req: IncomingMessage): boolean {
  return (req.socket as MarkedSocket)[CLOSING] === true;
}
