import { Pool, type Dispatcher } from 'undici';

export const PROXY_CONNECT_TIMEOUT = 'PROXY_CONNECT_TIMEOUT';

/** Timeouts of the proxy's own step: connecting to it, or waiting for its answer to CONNECT. */
const PROXY_TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/**
 * The ProxyAgent's client to an HTTP proxy, for `clientFactory`. undici codes a proxy that
 * does not answer in time as it codes the upstream's TLS handshake timing out inside the
 * tunnel; this pool re-codes the first, so the two can be told apart. The CONNECT answer
 * must come within the connect timeout.
 */
export function proxyTunnelPool(connectTimeoutMs: number): (origin: URL, options: object) => Dispatcher {
  return (origin, options) => {
    const pool = new Pool(origin, { ...options, headersTimeout: connectTimeoutMs });
    const connect = pool.connect.bind(pool) as (params: Dispatcher.ConnectOptions) => Promise<Dispatcher.ConnectData>;
    return Object.assign(pool, {
      connect: (params: Dispatcher.ConnectOptions) =>
        connect(params).catch((error: unknown) => {
          const code = (error as { code?: unknown } | null)?.code;
          if (typeof code !== 'string' || !PROXY_TIMEOUT_CODES.has(code)) throw error;
          throw Object.assign(new Error(`HTTP proxy: ${(error as Error).message}`), { code: PROXY_CONNECT_TIMEOUT, cause: error });
        }),
    });
  };
}
