import type { HeaderMap, OutgoingHeaders } from './header-map.ts';
import { copyHeadersWithout, HOP_BY_HOP_HEADERS, withHopByHop } from './hop-by-hop-headers.ts';
import { CLIENT_CREDENTIAL_HEADERS } from './strip-client-credentials.ts';

/**
 * Request headers a client sent that must not reach an upstream besides hop-by-hop ones:
 * `host` (the upstream's own is set from its URL), `expect` (100-continue is per hop), and
 * `accept-encoding`, so that responses arrive uncompressed and usage can be read from them.
 */
const CLIENT_ONLY_REQUEST_HEADERS = ['host', 'expect', 'accept-encoding'];
const NOT_FORWARDED = withHopByHop([...CLIENT_CREDENTIAL_HEADERS, ...CLIENT_ONLY_REQUEST_HEADERS]);

/**
 * Client request headers to forward: no hop-by-hop, no client credential, none of the
 * client-only ones. `content-length` is kept for an unchanged body; a caller that rewrites
 * the body sets the new length (or deletes it to stream chunked).
 */
export function upstreamRequestHeaders(clientHeaders: HeaderMap): OutgoingHeaders {
  return copyHeadersWithout(clientHeaders, NOT_FORWARDED);
}

/**
 * Upstream response headers to send to the client: no hop-by-hop. `content-length` is kept;
 * a caller that alters the body (dropping an event, say) deletes it.
 */
export function clientResponseHeaders(upstreamHeaders: HeaderMap): OutgoingHeaders {
  return copyHeadersWithout(upstreamHeaders, HOP_BY_HOP_HEADERS);
}
