import { Pool, type Dispatcher } from 'undici';

export const PROXY_CONNECT_TIMEOUT = 'PROXY_CONNECT_TIMEOUT';
export const PROXY_CONNECT_FAILED = 'PROXY_CONNECT_FAILED';

/** Timeouts of the proxy's own step: connecting to it, or waiting for its answer to CONNECT. */
const PROXY_TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/**
 * A CONNECT to an HTTP(S) proxy that got no answer (refused, closed, reset, garbage, an
 * untrusted proxy certificate, no answer in time), coded as the proxy's failure: never as the
 * upstream's, nor as undici's UND_ERR_SOCKET, which its ProxyAgent retries without end
 * (nodejs/undici#3897). A CONNECT answered with a status is not a rejection.
 */
export function proxyConnectError(error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  const timedOut = typeof code === 'string' && PROXY_TIMEOUT_CODES.has(code);
  return Object.assign(new Error(`HTTP proxy: ${(error as Error | null)?.message ?? String(error)}`), {
    code: timedOut ? PROXY_CONNECT_TIMEOUT : PROXY_CONNECT_FAILED,
    cause: error,
  });
}

/**
 * The ProxyAgent's client to an HTTP proxy, for `clientFactory`. undici codes a proxy that
 * does not answer in time as it codes the upstream's TLS handshake timing out inside the
 * tunnel, and a proxy that closes the connection as a socket error it retries; this pool
 * re-codes every failure of the CONNECT as the proxy's. The CONNECT answer must come within
 * the connect timeout.
 */
export function proxyTunnelPool(connectTimeoutMs: number): (origin: URL, options: object) => Dispatcher {
  return (origin, options) => {
    const pool = new Pool(origin, { ...options, headersTimeout: connectTimeoutMs });
    const connect = pool.connect.bind(pool) as (params: Dispatcher.ConnectOptions) => Promise<Dispatcher.ConnectData>;
    return Object.assign(pool, {
      connect: (params: Dispatcher.ConnectOptions) =>
        connect(params).catch((error: unknown) => {
          throw proxyConnectError(error);
        }),
    });
  };
}
