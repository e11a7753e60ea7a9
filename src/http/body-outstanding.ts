import type { IncomingMessage } from 'node:http';

/**
 * Whether a request still has body bytes to come: it declared a body (a length above 0, or
 * chunked framing) and node has not seen all of it. A refusal answered then reads and
 * discards the rest (see drainAfterAnswer), since the server sets no whole-request deadline.
 * `complete` alone is not enough: it is false for any request while its handler first runs.
 */
export function bodyOutstanding(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}
