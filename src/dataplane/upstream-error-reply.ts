import type { ServerResponse } from 'node:http';
import { maskSecret } from '../store/mask.ts';
import { clientResponseHeaders, type OutgoingHeaders, type ReplyHead, type UpstreamReply } from '../upstream/index.ts';
import { withRequestId } from './request-id-headers.ts';

/** An upstream error answer as the client gets it: read whole, or its first MiB and the rest to stream. */
export interface UpstreamErrorReply {
  status: number;
  headers: OutgoingHeaders;
  /** The body, or its first ERROR_BODY_LIMIT bytes when `stream` is set. */
  body: Buffer;
  /**
   * A chunked body that went on past ERROR_BODY_LIMIT: the answer to stream instead (these
   * headers, this body, then the rest as the upstream sends it). Abort it if it is not sent.
   */
  stream?: UpstreamReply;
}

/**
 * Error bodies up to this size are read whole; a larger one (rare) streams through, and only
 * its first MiB has the secret masked: masking all of it would mean holding it all.
 */
export const ERROR_BODY_LIMIT = 1024 * 1024;

/** An error answer to read (whole, or its first MiB) before the client gets it: not an event stream, not declared larger. */
export function isReadableError(reply: UpstreamReply): boolean {
  if (reply.status < 400) return false;
  const declared = Number(reply.headers['content-length'] ?? 0);
  return !(declared > ERROR_BODY_LIMIT) && !String(reply.headers['content-type'] ?? '').includes('text/event-stream');
}

/**
 * Reads an upstream error answer (up to its first MiB) and masks the upstream secret out of
 * its headers and what was read. A body that breaks off within that is answered empty, with
 * the upstream's status and headers.
 */
export async function readUpstreamError(reply: UpstreamReply, secret: string): Promise<UpstreamErrorReply> {
  let read: ReplyHead;
  try {
    read = await reply.readHead(ERROR_BODY_LIMIT);
  } catch {
    read = { head: Buffer.alloc(0), rest: undefined };
  }
  const headers = clientResponseHeaders(reply.headers);
  const body = maskUpstreamSecret(headers, read.head, secret);
  if (read.rest !== undefined) return { status: reply.status, headers, body, stream: read.rest(headers, body) };
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
