import type { ServerResponse } from 'node:http';
import { clientResponseHeaders, type OutgoingHeaders, type ReplyHead, type UpstreamReply } from '../upstream/index.ts';
import { decodedReply, decodeWholeErrorBody, throwIfUndecodable } from './decode-reply-body.ts';
import { maskSecretInBytes, maskSecretInHeaders, SecretMaskingStream } from './mask-upstream-secret.ts';
import { drainIfBodyUnread } from './drain-if-body-unread.ts';
import { withRequestId } from './request-id-headers.ts';

/** An upstream error answer as the client gets it: read whole, or its first MiB and the rest to stream. */
export interface UpstreamErrorReply {
  status: number;
  headers: OutgoingHeaders;
  /** The body, or its first ERROR_BODY_LIMIT bytes (masked) when `stream` is set. */
  body: Buffer;
  /**
   * A chunked body that went on past ERROR_BODY_LIMIT: the answer to stream instead (these
   * headers, this body, then the rest as the upstream sends it, masked on the way). Abort it
   * if it is not sent.
   */
  stream?: UpstreamReply;
}

/** Error bodies up to this size are read whole; a larger one (rare) streams through, masked as it goes. */
export const ERROR_BODY_LIMIT = 1024 * 1024;

/**
 * An error answer to read (whole, or its first MiB) before the client gets it: not declared
 * larger, and not an event stream unless `eventStreamToo` (an answer whose verdict needs its body).
 */
export function isReadableError(reply: UpstreamReply, eventStreamToo = false): boolean {
  if (reply.status < 400) return false;
  const declared = Number(reply.headers['content-length'] ?? 0);
  // Media types are case-insensitive (RFC 9110): `Text/Event-Stream` is an event stream too.
  return !(declared > ERROR_BODY_LIMIT) && (eventStreamToo || !String(reply.headers['content-type'] ?? '').toLowerCase().includes('text/event-stream'));
}

/**
 * Reads an upstream error answer (up to its first MiB, decoded when it came compressed) and
 * masks the upstream secret out of its headers and body; a longer body has the rest masked as
 * it streams. A body that breaks off within that first MiB is answered empty, with the
 * upstream's status and headers; so is one silent for `idleTimeoutMs`, which is aborted then.
 * One in a coding the gateway cannot decode, or that does not decode, throws
 * `upstream_unreachable`: its bytes cannot be masked.
 */
export async function readUpstreamError(reply: UpstreamReply, secret: string, idleTimeoutMs: number): Promise<UpstreamErrorReply> {
  // Without content-length: masking (and decoding) changes the body's length.
  const headers = clientResponseHeaders(reply.headers, true);
  const decoded = decodedReply(reply, headers);
  let read: ReplyHead;
  let silence: NodeJS.Timeout | undefined;
  try {
    silence = setTimeout(() => reply.abort(), idleTimeoutMs);
    // Each chunk that arrives while the head is read restarts the wait; the body passes unchanged.
    read = await decoded.mapped(decoded.headers, { data: (chunk) => (silence?.refresh(), chunk), end: () => undefined }).readHead(ERROR_BODY_LIMIT);
  } catch (err) {
    throwIfUndecodable(err);
    read = { head: Buffer.alloc(0), rest: undefined };
  } finally {
    clearTimeout(silence);
    silence = undefined;
  }
  if (read.rest === undefined) {
    const body = maskUpstreamSecret(headers, read.head, secret);
    headers['content-length'] = String(body.length);
    return { status: reply.status, headers, body };
  }
  maskSecretInHeaders(headers, secret);
  // One masking stream for the head and the rest, so that a secret across the cut is masked too.
  const masking = new SecretMaskingStream(secret);
  const body = masking.data(read.head);
  return { status: reply.status, headers, body, stream: read.rest(headers, body, masking) };
}

/**
 * An error answer to stream as it arrives (an event stream, a body declared larger than
 * ERROR_BODY_LIMIT), or a redirect (300-399: its body repeats a location that may carry the
 * key), with the upstream secret masked out of its headers and, as it passes,
 * its whole body, decoded first when it came compressed (one that stops decoding breaks off).
 * Event streams still go event by event. A coding the gateway cannot decode throws
 * `upstream_unreachable`.
 */
export function maskedUpstreamError(reply: UpstreamReply, secret: string): UpstreamReply {
  // Without content-length: masking (and decoding) changes the body's length.
  const headers = clientResponseHeaders(reply.headers, true);
  const decoded = decodedReply(reply, headers);
  maskSecretInHeaders(headers, secret);
  return decoded.mapped(headers, new SecretMaskingStream(secret));
}

/**
 * Masks the upstream secret out of an answer's headers (in place) and body: an upstream (or a
 * relay in front of it) that echoes the key it was sent must not hand it to the client. A
 * compressed body is decoded first (up to ERROR_BODY_LIMIT), and its headers lose
 * `content-encoding`; one that cannot be decoded throws `upstream_unreachable`.
 */
export function maskUpstreamSecret(headers: OutgoingHeaders, body: Buffer, secret: string): Buffer {
  const decoded = decodeWholeErrorBody(headers, body, ERROR_BODY_LIMIT);
  maskSecretInHeaders(headers, secret);
  return maskSecretInBytes(decoded, secret);
}

/**
 * `messages`: the client speaks the messages protocol, whose SDK reads `request-id`. An answer
 * given while the request's body still uploads drains the rest of it (see drainIfBodyUnread).
 */
export function sendUpstreamError(res: ServerResponse, requestId: string, reply: UpstreamErrorReply, messages = false): void {
  res.writeHead(reply.status, withRequestId(drainIfBodyUnread(res, { ...reply.headers }), requestId, messages));
  res.end(reply.body);
}
