import type { ServerResponse } from 'node:http';
import { maskSecret } from '../store/mask.ts';
import { clientResponseHeaders, type OutgoingHeaders, type UpstreamReply } from '../upstream/index.ts';
import { withRequestId } from './request-id-headers.ts';

/** An upstream error answer, read whole, as the client gets it. */
export interface UpstreamErrorReply {
  status: number;
  headers: OutgoingHeaders;
  body: Buffer;
}

/** Error bodies up to this size are read whole; a larger one (rare) streams through as sent. */
export const ERROR_BODY_LIMIT = 1024 * 1024;

/** An error answer small enough to read whole before the client gets it (not an event stream). */
export function isReadableError(reply: UpstreamReply): boolean {
  if (reply.status < 400) return false;
  const declared = Number(reply.headers['content-length'] ?? 0);
  return !(declared > ERROR_BODY_LIMIT) && !String(reply.headers['content-type'] ?? '').includes('text/event-stream');
}

/**
 * Reads an upstream error answer (its first MiB) and masks the upstream secret out of it. A
 * body that breaks off is answered empty, with the upstream's status and headers.
 */
export async function readUpstreamError(reply: UpstreamReply, secret: string): Promise<UpstreamErrorReply> {
  let body: Buffer;
  try {
    body = await reply.readAll(ERROR_BODY_LIMIT);
  } catch {
    body = Buffer.alloc(0);
  }
  const headers = clientResponseHeaders(reply.headers);
  body = maskUpstreamSecret(headers, body, secret);
  headers['content-length'] = String(body.length);
  return { status: reply.status, headers, body };
}

/**
 * Masks the upstream secret out of an answer's headers (in place) and body: an upstream (or a
 * relay in front of it) that echoes the key it was sent must not hand it to the client.
 */
export function maskUpstreamSecret(headers: OutgoingHeaders, body: Buffer, secret: string): Buffer {
  const masked = maskSecret(secret);
  for (const name in headers) {
    const value = headers[name]!;
    headers[name] = Array.isArray(value) ? value.map((v) => v.split(secret).join(masked)) : value.split(secret).join(masked);
  }
  // latin1 maps bytes one to one, so the rest of the body is unchanged whatever its encoding.
  return body.includes(secret) ? Buffer.from(body.toString('latin1').split(secret).join(masked), 'latin1') : body;
}

export function sendUpstreamError(res: ServerResponse, requestId: string, reply: UpstreamErrorReply): void {
  res.writeHead(reply.status, withRequestId({ ...reply.headers }, requestId));
  res.end(reply.body);
}
