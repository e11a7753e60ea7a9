import { INVALID_PROXY_URL } from './parse-proxy-url.ts';
import { SOCKS_CONNECT_FAILED } from './socks-connector.ts';

export type UpstreamFailureKind =
  | 'aborted'
  | 'connect_timeout'
  | 'connect_failed'
  | 'headers_timeout'
  | 'body_timeout'
  | 'connection_lost'
  | 'proxy_misconfigured'
  | 'unknown';

export interface UpstreamFailure {
  kind: UpstreamFailureKind;
  /**
   * True when the request provably never reached the upstream (no connection was made), so
   * even an operation that is unsafe to replay may be retried elsewhere.
   */
  notDelivered: boolean;
  /** Gateway reason code for logs and error bodies. */
  code: string;
}

/** Error codes meaning no connection to the upstream was established. */
const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UND_ERR_PRX_TLS',
  SOCKS_CONNECT_FAILED,
]);

const LOST_CONNECTION_CODES: ReadonlySet<string> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED']);

const FAILURES: Readonly<Record<UpstreamFailureKind, UpstreamFailure>> = {
  aborted: { kind: 'aborted', notDelivered: false, code: 'client_aborted' },
  connect_timeout: { kind: 'connect_timeout', notDelivered: true, code: 'upstream_connect_timeout' },
  connect_failed: { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' },
  headers_timeout: { kind: 'headers_timeout', notDelivered: false, code: 'upstream_timeout' },
  body_timeout: { kind: 'body_timeout', notDelivered: false, code: 'upstream_idle_timeout' },
  connection_lost: { kind: 'connection_lost', notDelivered: false, code: 'upstream_connection_lost' },
  // The gateway's own configuration (a stored proxy URL it cannot use): no credential is to blame.
  proxy_misconfigured: { kind: 'proxy_misconfigured', notDelivered: true, code: 'proxy_misconfigured' },
  unknown: { kind: 'unknown', notDelivered: false, code: 'upstream_error' },
};

/** What a rejected upstream request (or a failed response body) means for failover. */
export function classifyUpstreamError(error: unknown): UpstreamFailure {
  const code = errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause);
  const name = (error as { name?: unknown } | null)?.name;
  const message = String((error as { message?: unknown } | null)?.message ?? '');
  if (code === INVALID_PROXY_URL) return FAILURES.proxy_misconfigured;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return FAILURES.connect_timeout;
  // A proxy that refuses the tunnel surfaces as an aborted request; nothing reached the upstream.
  if (message.startsWith('Proxy response (')) return FAILURES.connect_failed;
  if (code !== undefined && CONNECT_FAILURE_CODES.has(code)) return FAILURES.connect_failed;
  if (name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return FAILURES.aborted;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return FAILURES.headers_timeout;
  if (code === 'UND_ERR_BODY_TIMEOUT') return FAILURES.body_timeout;
  if (code !== undefined && LOST_CONNECTION_CODES.has(code)) return FAILURES.connection_lost;
  return FAILURES.unknown;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
