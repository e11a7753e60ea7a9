import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { UpstreamReply, type HeaderMap, type OutgoingHeaders } from '../upstream/index.ts';
import { DataPlaneError } from './data-plane-error.ts';

/** How a coding is undone: as a body streams, or over a body read whole. */
interface Decoder {
  stream: () => Transform;
  whole: (body: Buffer, options: zlib.ZlibOptions & zlib.BrotliOptions) => Buffer;
}

/**
 * The content codings a body is decoded from (an error answer's, to mask it; a stream's, to read
 * its events; a plain answer's, beside it, to read its usage): an upstream, or a relay in front
 * of it, may compress it although the gateway asked for `identity`.
 */
const DECODERS: Record<string, Decoder> = {
  gzip: { stream: () => zlib.createGunzip(), whole: zlib.gunzipSync },
  'x-gzip': { stream: () => zlib.createGunzip(), whole: zlib.gunzipSync },
  deflate: { stream: () => zlib.createInflate(), whole: zlib.inflateSync },
  br: { stream: () => zlib.createBrotliDecompress(), whole: zlib.brotliDecompressSync },
};

/** A decoder failed: the body is not what its content-encoding says. */
class UndecodableBodyError extends Error {}

/**
 * The decoders an answer's content-encoding calls for, in the order to apply them (none for
 * identity); throws the gateway's own error for a coding it cannot decode, whose bytes must not
 * pass unmasked.
 */
function decodersFor(headers: HeaderMap): Decoder[] {
  // Applied last, undone first.
  // The coding is not quoted: it is the upstream's text, which may carry the key.
  return codingsOf(headers).reverse().map((coding) => DECODERS[coding] ?? throwUndecodable('an unsupported content-encoding'));
}

function codingsOf(headers: HeaderMap): string[] {
  const value = headers['content-encoding'];
  return (Array.isArray(value) ? value.join(',') : value ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/**
 * The decoding stages of an answer whose codings are all decodable (none for identity), in the
 * order to pipe them; for a plain answer's usage, read beside the bytes that go as sent.
 */
export function decodingStages(headers: HeaderMap): Transform[] {
  return decodersFor(headers).map((d) => d.stream());
}

/**
 * A whole body of an answer whose codings are all decodable, decoded to at most `limit` bytes:
 * `over_limit` when it decodes to more, undefined when it does not decode.
 */
export function decodedWithin(headers: HeaderMap, body: Buffer, limit: number): Buffer | 'over_limit' | undefined {
  try {
    return decodersFor(headers).reduce((data, d) => d.whole(data, { maxOutputLength: limit }), body);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'over_limit' : undefined;
  }
}

/** Whether every content coding of an answer is one the gateway decodes (identity alone included). */
export function decodable(headers: HeaderMap): boolean {
  return codingsOf(headers).every((coding) => DECODERS[coding] !== undefined);
}

function throwUndecodable(what: string): never {
  throw new DataPlaneError('upstream_unreachable', `(The upstream's error answer came in ${what}, which the gateway cannot decode to mask its credential.)`);
}

/** Throws `upstream_unreachable` when a decodedReply broke off with `error` because its body did not decode. */
export function throwIfUndecodable(error: unknown): void {
  if (error instanceof UndecodableBodyError) throwUndecodable(`a corrupt encoding (${error.message})`);
}

/**
 * A reply with its body decoded as it arrives, and `headers` (the client's) without
 * `content-encoding`; the reply itself when it is not encoded. A coding the gateway cannot
 * decode aborts the reply and throws `upstream_unreachable`; a body that fails to decode breaks
 * the decoded reply off with an error throwIfUndecodable recognizes.
 */
export function decodedReply(reply: UpstreamReply, headers: OutgoingHeaders): UpstreamReply {
  let decoders: Decoder[];
  try {
    decoders = decodersFor(reply.headers);
  } catch (err) {
    reply.abort();
    throw err;
  }
  if (decoders.length === 0) return reply;
  delete headers['content-encoding'];
  const source = reply.toReadable();
  const stages = decoders.map((d) => d.stream());
  const last = stages[stages.length - 1]!;
  const decoded = new UpstreamReply(reply.status, headers, {
    pause: () => last.pause(),
    resume: () => last.resume(),
    abort: (reason) => source.destroy(reason),
  });
  let received = 0;
  let failed = false;
  const fail = (error: Error) => {
    if (failed) return;
    failed = true;
    for (const stage of stages) stage.destroy();
    source.destroy();
    decoded.pushError(error);
  };
  source.on('data', (chunk: Buffer) => (received += chunk.length));
  source.on('error', fail);
  for (const stage of stages) {
    stage.on('error', (error) => {
      // An empty body, even one labelled compressed, is just empty.
      if (received === 0 && !failed) {
        failed = true;
        return decoded.pushEnd();
      }
      fail(new UndecodableBodyError(error.message));
    });
  }
  last.on('data', (chunk: Buffer) => decoded.pushData(chunk));
  last.on('end', () => decoded.pushEnd());
  stages.reduce<NodeJS.ReadableStream>((from, to) => from.pipe(to), source);
  return decoded;
}

/**
 * A whole error body (a WebSocket handshake's answer) decoded, with `headers` (the client's)
 * without `content-encoding` nor `content-length`; throws `upstream_unreachable` for a coding
 * the gateway cannot decode, a body that does not decode (one cut at the handshake's limit
 * too) or one that decodes to more than `limit` bytes.
 */
export function decodeWholeErrorBody(headers: OutgoingHeaders, body: Buffer, limit: number): Buffer {
  const decoders = decodersFor(headers);
  if (decoders.length === 0) return body;
  delete headers['content-encoding'];
  delete headers['content-length'];
  if (body.length === 0) return body;
  try {
    return decoders.reduce((data, d) => d.whole(data, { maxOutputLength: limit }), body);
  } catch (err) {
    return throwUndecodable(`a corrupt or oversized encoding (${(err as Error).message})`);
  }
}
