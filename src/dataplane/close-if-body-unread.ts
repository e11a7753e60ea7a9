import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { bodyOutstanding, drainAfterAnswer } from '../http/body-outstanding.ts';

/** Set on a connection once an answer on it said `connection: close`. */
const CLOSING = Symbol('switchyard.closing');
type MarkedSocket = Socket & { [CLOSING]?: true };

/**
 * For an answer given while the request's body is still coming (a gateway refusal, an
 * upstream's answer given before it read the whole body): the rest of the body is drained
 * once the answer is sent, within bounds (see drainAfterAnswer), and the connection kept.
 * An answer that says `connection: close` marks the connection: node still parses a request
 * pipelined behind it, but its answer would never be sent (see connectionClosing).
 */
export function drainIfBodyUnread<H extends Record<string, string | string[]>>(res: ServerResponse, headers: H): H {
  if (bodyOutstanding(res.req)) drainAfterAnswer(res);
  if (headers['connection'] === 'close') (res.req.socket as MarkedSocket)[CLOSING] = true;
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
