import type { IncomingMessage } from 'node:http';
import { bodyOutstanding } from '../http/body-outstanding.ts';

/**
 * Marks a gateway refusal `connection: close` when the request's body is still coming: nobody
 * reads the rest, so a kept-alive connection would stall behind it (see bodyOutstanding).
 */
export function closeIfBodyUnread(req: IncomingMessage, headers: Record<string, string>): Record<string, string> {
  if (bodyOutstanding(req)) headers['connection'] ??= 'close';
  return headers;
}
