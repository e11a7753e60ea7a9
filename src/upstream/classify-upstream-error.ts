import { INVALID_PROXY_URL } from './parse-proxy-url.ts';
import { SOCKS_CONNECT_FAILED } from './socks-connector.ts';
import { PROXY_CONNECT_FAILED, PROXY_CONNECT_TIMEOUT } from './proxy-tunnel-pool.ts';
import { failedAfterWritingMs, requestProgress, requestWritten } from './request-written.ts';
import { endedReadConnection } from './reused-connection.ts';
import { UNSUPPORTED_ANSWER_CODING } from './answer-transfer-coding.ts';

export type UpstreamFailureKind =
  | 'aborted'
  | 'connect_timeout'
  | 'connect_failed'
  | 'headers_timeout'
  | 'body_timeout'
  | 'connection_lost'
  | 'answer_unreadable'
  | 'proxy_misconfigured'
  | 'proxy_unreachable'
  | 'credential_unusable'
  | 'unknown';

export interface UpstreamFailure {
  kind: UpstreamFailureKind;
  /**
   * True when the request provably never reached the upstream (no connection was made), so
   * even an operation that is unsafe to replay may be retried elsewhere.
   */
  notDelivered: boolean;
  /**
   * A deadline that passed after the request was sent (the headers, or the body going silent):
   * the upstream accepted it and may still be working on it. No fault of the credential (any
   * other would wait as long), and another attempt would bill the prompt again.
   */
  overdue?: true;
  /**
   * The connection broke while the request body was still being written and before any answer:
   * the upstream stopped taking the upload (an early refusal, such as of a body too large, whose
   * answer the reset discarded). No fault of the credential.
   */
  whileSending?: true;
  /**
   * The connection broke after the whole request was written and before any of its answer, within
   * STALE_CONNECTION_WINDOW_MS of the write, and it had carried earlier answers: a pooled
   * keep-alive connection the upstream closed as the request crossed its idle timeout (see
   * reused-connection.ts). It says nothing of the
   * credential; the same request on a new connection may well pass.
   */
  staleConnection?: true;
  /**
   * The upstream's certificate was refused (see CERTIFICATE_REFUSED_CODES): a connection never
   * made, but no fault of the credential, so no verdict on it (a cooldown would shelve every
   * credential of the Group, and outlive the restart that brings the fix).
   */
  certificateRefused?: true;
  /** Gateway reason code for logs and error bodies. */
  code: string;
}

/** A host that could not be connected to (refused, not found, out of reach). */
const HOST_UNREACHED_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'];

/** Error codes meaning no connection to the upstream was established. */
const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set([...HOST_UNREACHED_CODES, 'UND_ERR_PRX_TLS', SOCKS_CONNECT_FAILED, PROXY_CONNECT_FAILED]);

/**
 * The upstream's certificate refused: OpenSSL's verification codes as node names them (self-signed,
 * expired, an untrusted CA, ...; OUT_OF_MEM left out) and node's own name check's. The gateway's
 * trust store or the upstream's certificate is at fault, the same for every credential.
 */
const CERTIFICATE_REFUSED_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Other TLS failures, which come before the session is established, by code prefix: node's
 * `ERR_SSL_` / `ERR_TLS_` codes (a plain-HTTP port, no common protocol) and a verification code
 * not listed above.
 */
const TLS_FAILURE_CODE_PREFIXES: readonly string[] = ['ERR_SSL_', 'ERR_TLS_', 'CERT_', 'UNABLE_TO_'];

function isTlsFailureCode(code: string): boolean {
  return CERTIFICATE_REFUSED_CODES.has(code) || TLS_FAILURE_CODE_PREFIXES.some((prefix) => code.startsWith(prefix));
}

const LOST_CONNECTION_CODES: ReadonlySet<string> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED']);

const FAILURES: Readonly<Record<UpstreamFailureKind, UpstreamFailure>> = {
  aborted: { kind: 'aborted', notDelivered: false, code: 'client_aborted' },
  connect_timeout: { kind: 'connect_timeout', notDelivered: true, code: 'upstream_connect_timeout' },
  connect_failed: { kind: 'connect_failed', notDelivered: true, code: 'upstream_connect_failed' },
  headers_timeout: { kind: 'headers_timeout', notDelivered: false, overdue: true, code: 'upstream_timeout' },
  body_timeout: { kind: 'body_timeout', notDelivered: false, overdue: true, code: 'upstream_idle_timeout' },
  connection_lost: { kind: 'connection_lost', notDelivered: false, code: 'upstream_connection_lost' },
  // The upstream answered, in a form the gateway's client cannot read (see isUnreadableAnswer).
  answer_unreadable: { kind: 'answer_unreadable', notDelivered: false, code: 'upstream_answer_unreadable' },
  // The gateway's own configuration (a stored proxy URL it cannot use): no credential is to blame.
  proxy_misconfigured: { kind: 'proxy_misconfigured', notDelivered: true, code: 'proxy_misconfigured' },
  // The managed proxy is down or refused the gateway's login: the gateway's side again, not the credential's.
  proxy_unreachable: { kind: 'proxy_unreachable', notDelivered: true, code: 'proxy_unreachable' },
  // A header value refused before sending: the only one built from configuration is the
  // credential's secret (one stored before import refused such values), so the gateway's side again.
  credential_unusable: { kind: 'credential_unusable', notDelivered: true, code: 'credential_unusable' },
  unknown: { kind: 'unknown', notDelivered: false, code: 'upstream_error' },
};

/**
 * The headers timeout ran out while the body was still being written (undici runs it while the
 * socket waits to drain): the upstream stopped taking the request, so it cannot be working on
 * it. Not overdue, but the host failing, as a lost connection is; it did see part of the request.
 */
const SEND_TIMEOUT: UpstreamFailure = { kind: 'headers_timeout', notDelivered: false, code: 'upstream_send_timeout' };

/** A lost connection while the body was still being written (see UpstreamFailure.whileSending). */
const CLOSED_WHILE_SENDING: UpstreamFailure = { kind: 'connection_lost', notDelivered: false, whileSending: true, code: 'upstream_closed_while_sending' };

/** The upstream's certificate refused (see UpstreamFailure.certificateRefused). */
const CERTIFICATE_REFUSED: UpstreamFailure = { kind: 'connect_failed', notDelivered: true, certificateRefused: true, code: 'upstream_tls_certificate_invalid' };

/** A lost connection, for one read as stale no longer (forward-native's renewals spent). */
export const CONNECTION_LOST: UpstreamFailure = FAILURES.connection_lost;

/**
 * How soon after the request was written a lost connection that had carried earlier answers is
 * read as stale. An upstream that closed an idle connection as the request crossed it resets
 * it within about a round trip of the write; one lost later had the upstream (or a load
 * balancer) at work on the request: it crashed or was cut, and is judged as any lost connection
 * is, rather than the request going again (and billed again) to the same credential.
 */
export const STALE_CONNECTION_WINDOW_MS = 1_000;

/** A lost connection that had carried earlier answers (see UpstreamFailure.staleConnection). */
const STALE_CONNECTION: UpstreamFailure = { kind: 'connection_lost', notDelivered: false, staleConnection: true, code: 'upstream_stale_connection' };

/**
 * Connection failures that, through a proxy, are the connection to the proxy failing (a
 * CONNECT that got no answer at all, whatever the reason, is re-coded PROXY_CONNECT_FAILED).
 */
const PROXY_CONNECT_CODES: ReadonlySet<string> = new Set([...HOST_UNREACHED_CODES, PROXY_CONNECT_TIMEOUT, PROXY_CONNECT_FAILED, 'UND_ERR_PRX_TLS']);

/** CONNECT answers by which an HTTP proxy says that it could not reach the upstream. */
const PROXY_UPSTREAM_STATUSES = /^Proxy response \((?:502|503|504)\)/;

/** SOCKS5 replies (as the socks package words them) by which the proxy says that it could not reach the upstream. */
const SOCKS_UPSTREAM_REPLIES = /rejected connection - (?:HostUnreachable|ConnectionRefused|NetworkUnreachable|TTLExpired)$/;

/**
 * A header value refused before sending, by the rule of node's validateHeaderValue: undici's
 * `invalid <name> header` (UND_ERR_INVALID_ARG), or node's own client's ERR_INVALID_CHAR (the
 * WebSocket handshake's).
 */
const INVALID_HEADER_MESSAGE = /^invalid .+ header$/;

/**
 * Failures on the gateway's side of a credential (its proxy configuration, its proxy, a secret
 * no header can carry): no verdict on the credential.
 */
const GATEWAY_SIDE_KINDS = ['proxy_misconfigured', 'proxy_unreachable', 'credential_unusable'] as const;

export type GatewaySideKind = (typeof GATEWAY_SIDE_KINDS)[number];

export function failedAtGateway(failure: UpstreamFailure): failure is UpstreamFailure & { kind: GatewaySideKind } {
  return (GATEWAY_SIDE_KINDS as readonly string[]).includes(failure.kind);
}

/**
 * The managed proxy itself failed (its stored URL unusable, it down or refusing the gateway's
 * login): every credential behind it would fail the same way. Not a secret no header can carry,
 * which is one credential's.
 */
export function failedAtProxy(failure: Pick<UpstreamFailure, 'kind'>): boolean {
  return failure.kind === 'proxy_unreachable' || failure.kind === 'proxy_misconfigured';
}

/**
 * A connection to the upstream's address that never opened: refused, no such host, out of reach,
 * a connect (or TLS handshake) that failed or timed out, a proxy's word that the upstream is out
 * of its reach. The address's failure, not the credential's. Not a connection lost once open.
 */
export function neverConnected(failure: UpstreamFailure): boolean {
  return failure.kind === 'connect_failed' || failure.kind === 'connect_timeout';
}

/**
 * What a rejected upstream request (or a failed response body) means for failover.
 * `viaProxy`: the attempt went through a managed proxy, so a connection that failed may be the
 * proxy's rather than the upstream's.
 */
export function classifyUpstreamError(error: unknown, options: { viaProxy?: boolean } = {}): UpstreamFailure {
  const failure = classifyByCode(error, options);
  if (failure.kind === 'headers_timeout' && requestProgress(error) === 'partly') return SEND_TIMEOUT;
  if (failure.kind === 'connection_lost' && requestProgress(error) === 'partly') return CLOSED_WHILE_SENDING;
  // Progress is noted only for a request that failed before its answer's headers.
  if (failure.kind === 'connection_lost' && requestProgress(error) === 'whole' && endedReadConnection(error) && lostSoonAfterWriting(error)) return STALE_CONNECTION;
  // Failed before undici started writing it: the upstream saw nothing (nor works on it), whatever the code says.
  if (requestWritten(error) !== false || failure.notDelivered || failure.kind === 'aborted') return failure;
  const { overdue: _overdue, ...notSent } = failure;
  return { ...notSent, notDelivered: true };
}

function lostSoonAfterWriting(error: unknown): boolean {
  const after = failedAfterWritingMs(error);
  return after !== undefined && after <= STALE_CONNECTION_WINDOW_MS;
}

function classifyByCode(error: unknown, options: { viaProxy?: boolean }): UpstreamFailure {
  const code = errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause);
  const name = (error as { name?: unknown } | null)?.name;
  const message = String((error as { message?: unknown } | null)?.message ?? '');
  if (code === INVALID_PROXY_URL) return FAILURES.proxy_misconfigured;
  if ((code === 'UND_ERR_INVALID_ARG' && INVALID_HEADER_MESSAGE.test(message)) || code === 'ERR_INVALID_CHAR') return FAILURES.credential_unusable;
  if (options.viaProxy === true && proxyConnectFailed(code, message)) return FAILURES.proxy_unreachable;
  // Through a proxy, a connect timeout not re-coded as the proxy's is the upstream's TLS handshake in the tunnel.
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === PROXY_CONNECT_TIMEOUT) return FAILURES.connect_timeout;
  // A proxy that refuses the tunnel surfaces as an aborted request; nothing reached the upstream.
  if (message.startsWith('Proxy response (')) return FAILURES.connect_failed;
  if (code !== undefined && CONNECT_FAILURE_CODES.has(code)) return FAILURES.connect_failed;
  // A TLS failure is the handshake's, unless the exchange says the request was being written (a broken session then).
  if (code !== undefined && isTlsFailureCode(code)) {
    if (requestWritten(error) === true) return FAILURES.connection_lost;
    return CERTIFICATE_REFUSED_CODES.has(code) ? CERTIFICATE_REFUSED : FAILURES.connect_failed;
  }
  if (name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return FAILURES.aborted;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return FAILURES.headers_timeout;
  if (code === 'UND_ERR_BODY_TIMEOUT') return FAILURES.body_timeout;
  if (isUnreadableAnswer(code, name, message)) return FAILURES.answer_unreadable;
  if (code !== undefined && LOST_CONNECTION_CODES.has(code)) return FAILURES.connection_lost;
  return FAILURES.unknown;
}

/**
 * undici refused the answer's head: one that breaks HTTP/1.1 (its parser's errors), a head over
 * its size limit, two lengths that differ, a 100 Continue or 101 that nothing asked for (its
 * `bad response` and `bad upgrade`, which would otherwise read as a connection lost, and as a
 * stale one since it read bytes), or a transfer coding other than chunked (ExchangeHandler).
 */
function isUnreadableAnswer(code: string | undefined, name: unknown, message: string): boolean {
  if (name === 'HTTPParserError' || code === 'UND_ERR_HEADERS_OVERFLOW' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' || code === UNSUPPORTED_ANSWER_CODING) return true;
  return code === 'UND_ERR_SOCKET' && (message === 'bad response' || message === 'bad upgrade');
}

/**
 * Through a proxy the gateway connects only to the proxy, so a connection that never opened is
 * the proxy's, and so is a refused tunnel, unless the proxy says the upstream was out of its reach.
 * Upstream TLS errors inside the tunnel are left to the upstream.
 */
function proxyConnectFailed(code: string | undefined, message: string): boolean {
  if (message.startsWith('Proxy response (')) return !PROXY_UPSTREAM_STATUSES.test(message);
  if (code === SOCKS_CONNECT_FAILED) return !SOCKS_UPSTREAM_REPLIES.test(message);
  return code !== undefined && PROXY_CONNECT_CODES.has(code);
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
