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
  const named = connectionTokens(headers['connection']);
  const out: OutgoingHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(lower) || named.has(lower)) continue;
    out[lower] = value;
  }
  return out;
}

function connectionTokens(value: string | string[] | undefined): Set<string> {
  const tokens = new Set<string>();
  if (value === undefined) return tokens;
  for (const part of Array.isArray(value) ? value : [value]) {
    for (const token of part.split(',')) {
      const trimmed = token.trim().toLowerCase();
      if (trimmed.length > 0) tokens.add(trimmed);
    }
  }
  return tokens;
}
