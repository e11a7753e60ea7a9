import { clientResponseHeaders, type HeaderMap, type OutgoingHeaders } from '../upstream/index.ts';
import { maskSecretInHeaders } from './mask-upstream-secret.ts';

/** The gateway negotiates its own handshake with the client: accept, subprotocol, extensions. */
const OWN_HANDSHAKE_PREFIX = 'sec-websocket-';

/**
 * The end-to-end headers of an upstream's 101 that go on the client's 101 (request and
 * rate-limit headers), with the upstream secret masked: none of the upstream's own
 * handshake, hop-by-hop or credential headers.
 */
export function upstreamSwitchingHeaders(upstream: HeaderMap, secret: string): OutgoingHeaders {
  const out: OutgoingHeaders = {};
  // Without content-length: a 101 has no body of its own to measure.
  for (const [name, value] of Object.entries(clientResponseHeaders(upstream, true))) {
    if (!name.startsWith(OWN_HANDSHAKE_PREFIX)) out[name] = value;
  }
  maskSecretInHeaders(out, secret);
  return out;
}
