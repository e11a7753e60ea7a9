import { Agent, Pool, ProxyAgent, type Dispatcher } from 'undici';
import type { ResolvedUpstreamOptions } from './upstream-options.ts';
import { socksConnector } from './socks-connector.ts';
import { parseProxyUrl } from './parse-proxy-url.ts';
import { proxyTunnelPool } from './proxy-tunnel-pool.ts';

/** A keep-alive pool for one origin, no proxy. */
export function createOriginPool(origin: string, options: ResolvedUpstreamOptions): Dispatcher {
  return new Pool(origin, {
    connections: options.connections,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    connect: { ...options.tls, timeout: options.connectTimeoutMs },
  });
}

/**
 * One dispatcher per proxy URL, serving every origin through it: HTTP(S) proxies tunnel
 * with CONNECT (undici ProxyAgent), SOCKS5 proxies through the `socks` package.
 */
export function createProxyDispatcher(proxy: string, options: ResolvedUpstreamOptions): Dispatcher {
  const { url, kind } = parseProxyUrl(proxy);
  if (kind === 'connect') {
    return new ProxyAgent({
      uri: url.href,
      connections: options.connections,
      keepAliveTimeout: options.keepAliveTimeoutMs,
      clientFactory: proxyTunnelPool(options.connectTimeoutMs),
      proxyTls: { timeout: options.connectTimeoutMs },
      requestTls: { ...options.tls, timeout: options.connectTimeoutMs },
    });
  }
  return new Agent({
    connections: options.connections,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    connect: socksConnector(url, {
      connectTimeoutMs: options.connectTimeoutMs,
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
    }),
  });
}
