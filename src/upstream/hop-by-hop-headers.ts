import type { HeaderMap, OutgoingHeaders } from './header-map.ts';

/** Headers that describe one connection, never the message (RFC 9110 section 7.6.1). */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Copy without hop-by-hop headers, including any the Connection header names. Either direction. */
export function stripHopByHop(headers: HeaderMap): OutgoingHeaders {
  return copyHeadersWithout(headers, HOP_BY_HOP_HEADERS);
}

/** `names` with the hop-by-hop headers: the set copyHeadersWithout drops. */
export function withHopByHop(names: Iterable<string>): ReadonlySet<string> {
  return new Set([...HOP_BY_HOP_HEADERS, ...names]);
}

/**
 * Copy without the headers of `drop` (made with withHopByHop, so that one lookup per header
 * covers both) and any the Connection header names, in one pass: it runs twice per proxied
 * request.
 */
export function copyHeadersWithout(headers: HeaderMap, drop: ReadonlySet<string>): OutgoingHeaders {
  const named = connectionTokens(headers['connection']);
  const out: OutgoingHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (drop.has(lower) || named?.has(lower)) continue;
    out[lower] = value;
  }
  return out;
}

/** Header names a Connection header lists; undefined when it lists only hop-by-hop ones. */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  // The values nearly every request carries name no other header.
  if (value === undefined || value === 'keep-alive' || value === 'close' || value === 'Keep-Alive') return undefined;
  let tokens: Set<string> | undefined;
  for (const part of Array.isArray(value) ? value : [value]) {
    for (const token of part.split(',')) {
      const trimmed = token.trim().toLowerCase();
      if (trimmed.length > 0 && !HOP_BY_HOP_HEADERS.has(trimmed) && trimmed !== 'close') (tokens ??= new Set()).add(trimmed);
    }
  }
  return tokens;
}
