import type { HeaderMap } from './header-map.ts';

/** Codings an answer's body passes in as sent once undici has read it: `identity` (RFC 2616's, since withdrawn) is none. */
const PASSED_CODINGS: ReadonlySet<string> = new Set(['chunked', 'identity', '']);

/** The code of the error an answer in a transfer coding other than chunked fails with. */
export const UNSUPPORTED_ANSWER_CODING = 'UPSTREAM_UNSUPPORTED_TRANSFER_CODING';

/**
 * The error for an answer whose Transfer-Encoding lists a coding other than chunked, if it is
 * one. undici takes only the chunked framing off, and the header is hop-by-hop, so a `gzip,
 * chunked` body would otherwise reach the client compressed with nothing saying so. The gateway
 * sends no TE, so the upstream had no leave to use one (RFC 9112 §6.1).
 */
export function unsupportedAnswerCoding(headers: HeaderMap): Error | undefined {
  const listed = headers['transfer-encoding'];
  if (listed === undefined) return undefined;
  const value = Array.isArray(listed) ? listed.join(',') : listed;
  // The value nearly every streamed answer carries, without a split.
  if (value === 'chunked') return undefined;
  if (value.split(',').every((coding) => PASSED_CODINGS.has(coding.trim().toLowerCase()))) return undefined;
  // The value is not quoted: it is the upstream's text.
  return Object.assign(new Error('The upstream answered in a transfer coding other than chunked.'), { code: UNSUPPORTED_ANSWER_CODING });
}
