import type { IncomingMessage } from 'node:http';

// What a request's connection fails with once its client has left (a reset, an end mid-body, a
// write to a closed socket) or broke its own request's framing (node's parser errors, HPE_*).
const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED']);

/**
 * Whether `err` says no more than that the request's connection is gone: its client left, or
 * the gateway ended it (a management body gone silent). Ordinary client behaviour, not a
 * failure of the gateway: nothing to log and no one left to answer. Any other error, even on a
 * closed connection, is the gateway's own.
 */
export function isConnectionGoneError(err: unknown, req: IncomingMessage): boolean {
  if (!req.destroyed && req.socket?.destroyed !== true) return false;
  const code = typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined;
  return typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('HPE_'));
}
