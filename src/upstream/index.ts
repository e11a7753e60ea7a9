export { encodePathParameter } from './encode-path-parameter.ts';
export { firstHeaderValue } from './header-map.ts';
export type { HeaderMap, OutgoingHeaders } from './header-map.ts';
export { HOP_BY_HOP_HEADERS, copyHeadersWithout, stripHopByHop, withHopByHop } from './hop-by-hop-headers.ts';
export {
  CLIENT_CREDENTIAL_HEADERS,
  CLIENT_CREDENTIAL_QUERY_PARAMS,
  isClientCredentialQueryName,
  isClientCredentialSubprotocol,
  withoutQueryParams,
  mapQuerySegments,
} from './strip-client-credentials.ts';
export { clientResponseHeaders, upstreamRequestHeaders } from './forward-headers.ts';
export { INVALID_PROXY_URL, InvalidProxyUrlError, SUPPORTED_PROXY_SCHEMES, parseProxyUrl, proxyUrlProblem } from './parse-proxy-url.ts';
export type { ProxyUrlProblem } from './parse-proxy-url.ts';
export { redactUrl } from './redact-url.ts';
export type { UpstreamClientOptions } from './upstream-options.ts';
export { DEFAULT_CONNECT_TIMEOUT_MS } from './upstream-options.ts';
export { UpstreamClient } from './upstream-client.ts';
export type { LiveUpstreams, UpstreamRequest, UpstreamResponse, UpstreamTarget } from './upstream-client.ts';
export { createOriginPool, createProxyDispatcher } from './create-dispatcher.ts';
export { socksConnector } from './socks-connector.ts';
export type { SocksConnectorOptions } from './socks-connector.ts';
export { CONNECTION_LOST, classifyUpstreamError, failedAtGateway, failedAtProxy, neverConnected } from './classify-upstream-error.ts';
export type { GatewaySideKind, UpstreamFailure, UpstreamFailureKind } from './classify-upstream-error.ts';
export type { UpstreamExchange } from './upstream-client.ts';
export { UpstreamReply, upstreamAbortError } from './upstream-reply.ts';
export type { ReplyHead, UpstreamBodySink } from './upstream-reply.ts';
export { basePath, joinBasePath, joinBaseUrl, type BasePath } from './base-url-path.ts';
export { proxyConnectError } from './proxy-tunnel-pool.ts';
