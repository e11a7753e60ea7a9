import type { HeaderMap, OutgoingHeaders } from './header-map.ts';
import { stripHopByHop } from './hop-by-hop-headers.ts';
import { stripClientCredentialHeaders } from './strip-client-credentials.ts';

/**
 * Request headers a client sent that must not reach an upstream besides hop-by-hop ones:
 * `host` (the upstream's own is set from its URL), `expect` (100-continue is per hop), and
 * `accept-encoding`, so that responses arrive uncompressed and usage can be read from them.
 */
const CLIENT_ONLY_REQUEST_HEADERS: ReadonlySet<string> = new Set(['host', 'expect', 'accept-encoding']);

/**
 * Client request headers to forward: no hop-by-hop, no client credential, none of the
 * client-only ones. `content-length` is kept for an unchanged body; a caller that rewrites
 * the body sets the new length (or deletes it to stream chunked).
 */
export function upstreamRequestHeaders(clientHeaders: HeaderMap): OutgoingHeaders {
  const out = stripClientCredentialHeaders(stripHopByHop(clientHeaders));
  for (const name of CLIENT_ONLY_REQUEST_HEADERS) delete out[name];
  return out;
}

/**
 * Upstream response headers to send to the client: no hop-by-hop. `content-length` is kept;
 * a caller that alters the body (dropping an event, say) deletes it.
 */
export function clientResponseHeaders(upstreamHeaders: HeaderMap): OutgoingHeaders {
  return stripHopByHop(upstreamHeaders);
}
