import type { IncomingMessage } from 'node:http';

/**
 * The request id of a request with a chunked body, whose framing node's parser may refuse
 * mid-body: the server answers that outside the handler (src/server/answer-client-errors.ts),
 * and the answer names the record the handler writes. Only a chunked body can be refused
 * once its head was read, so no other request pays for an entry.
 */
const ids = new WeakMap<IncomingMessage, string>();

export function noteChunkedRequestId(req: IncomingMessage, requestId: string): void {
  if (req.headers['transfer-encoding'] !== undefined) ids.set(req, requestId);
}

export function loggedRequestId(req: IncomingMessage): string | undefined {
  return ids.get(req);
}
