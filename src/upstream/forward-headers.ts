import type { HeaderMap, OutgoingHeaders } from './header-map.ts';
import { copyHeadersWithout, withHopByHop } from './hop-by-hop-headers.ts';
import { CLIENT_CREDENTIAL_HEADERS } from './strip-client-credentials.ts';

/**
 * Request headers a client sent that must not reach an upstream besides hop-by-hop ones:
 * `host` (the upstream's own is set from its URL), `expect` (100-continue is per hop),
 * `accept-encoding`, replaced by `identity`, so that responses arrive uncompressed and usage can
 * be read from them, and Google's `x-goog-fieldmask`, which filters the answer and could leave
 * its usage out (the client gets the whole answer instead). The client's cookies (the gateway
 * uses none) and who it is or came through (`forwarded`, the common `x-forwarded-*` ones,
 * `x-real-ip` and the other client-IP headers CDNs and proxies set, `via`) are not the
 * upstream's business, and a self-hosted upstream that trusts such headers would believe a
 * client's forged ones. A browser's `Origin` is answered by the data plane's own CORS: the
 * gateway, not the page, is the upstream's client, and Anthropic refuses a request naming an
 * Origin 401 (without `anthropic-dangerous-direct-browser-access`, or with it when browser
 * access is off), which would disable the credential; that opt-in header means nothing without
 * an Origin. `referer` is still forwarded: Google judges a key's referrer restriction by it,
 * and a refusal then is the client's (google-error-reasons.ts).
 */
const CLIENT_ONLY_REQUEST_HEADERS = [
  'host',
  'expect',
  'accept-encoding',
  'x-goog-fieldmask',
  'cookie',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-server',
  'x-forwarded-ssl',
  'x-real-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'x-client-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  'x-original-forwarded-for',
  'via',
  'origin',
  'anthropic-dangerous-direct-browser-access',
];
const NOT_FORWARDED = withHopByHop([...CLIENT_CREDENTIAL_HEADERS, ...CLIENT_ONLY_REQUEST_HEADERS]);

/**
 * Client request headers to forward: no hop-by-hop, no client credential, none of the
 * client-only ones. `content-length` is kept for an unchanged body; a caller that rewrites
 * the body sets the new length (or deletes it to stream chunked).
 */
export function upstreamRequestHeaders(clientHeaders: HeaderMap): OutgoingHeaders {
  const headers = copyHeadersWithout(clientHeaders, NOT_FORWARDED);
  // Said, not left out: with no Accept-Encoding any coding is acceptable (RFC 9110 §12.5.3),
  // and a compressed answer would hide its usage (and a dropped usage chunk) from the relay.
  headers['accept-encoding'] = 'identity';
  return headers;
}

/**
 * Upstream response headers not passed back that are no credential header (a request's is
 * forwarded): Anthropic names the operator's account in `anthropic-organization-id` and its
 * workspace in `anthropic-workspace-id` (the anthropic SDK reads it as `workspaceID`); an
 * upstream's CORS answer is about its own origin, and the data plane states its own
 * (src/dataplane/allow-any-origin.ts), which one passed back would override. `set-cookie` is
 * the operator's session with the upstream (a CDN's bot cookie among them), and `alt-svc` and
 * `strict-transport-security` describe the vendor's origin, not the gateway's.
 */
const UPSTREAM_ONLY_RESPONSE_HEADERS = [
  'anthropic-organization-id',
  'anthropic-workspace-id',
  'set-cookie',
  'alt-svc',
  'strict-transport-security',
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-expose-headers',
  'access-control-max-age',
];

/**
 * Credential headers never go back to the client, whatever the status: an upstream (or a relay
 * in front of it) may echo the key it was sent under the name it was sent in, and OpenAI names
 * the organization and project of the gateway's key in `openai-organization`/`openai-project`.
 */
const NOT_PASSED_BACK = withHopByHop([...CLIENT_CREDENTIAL_HEADERS, ...UPSTREAM_ONLY_RESPONSE_HEADERS]);
const NOT_PASSED_BACK_NOR_LENGTH = withHopByHop([...CLIENT_CREDENTIAL_HEADERS, ...UPSTREAM_ONLY_RESPONSE_HEADERS, 'content-length']);

/**
 * Upstream response headers to send to the client: no hop-by-hop, no credential nor account header. `content-length` is kept
 * unless `bodyMayChange` (a relay that may drop an event or add an error event). Left out of
 * the copy rather than deleted after: a deleted property turns the object into a dictionary,
 * which writeHead then reads more slowly on every streamed response.
 */
export function clientResponseHeaders(upstreamHeaders: HeaderMap, bodyMayChange = false): OutgoingHeaders {
  return copyHeadersWithout(upstreamHeaders, bodyMayChange ? NOT_PASSED_BACK_NOR_LENGTH : NOT_PASSED_BACK);
}
