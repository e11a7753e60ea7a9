import { Agent, Pool, ProxyAgent, type Dispatcher } from 'undici';
import type { ResolvedUpstreamOptions } from './upstream-options.ts';
import { socksConnector } from './socks-connector.ts';
import { InvalidProxyUrlError, parseProxyUrl, type ParsedProxyUrl } from './parse-proxy-url.ts';
import { proxyTunnelPool } from './proxy-tunnel-pool.ts';
import { redactUrl } from './redact-url.ts';

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
 * with CONNECT (undici ProxyAgent), SOCKS5 proxies through the `socks` package. A proxy URL
 * the dispatcher cannot be built from is the gateway's configuration failing, so it is thrown
 * as an InvalidProxyUrlError (classified `proxy_misconfigured`), never as the upstream's error.
 */
export function createProxyDispatcher(proxy: string, options: ResolvedUpstreamOptions): Dispatcher {
  const parsed = parseProxyUrl(proxy);
  try {
    return buildProxyDispatcher(parsed, options);
  } catch (error) {
    throw new InvalidProxyUrlError('invalid_proxy_url', `proxy URL ${redactUrl(proxy)} cannot be used: ${(error as Error).message}`, { cause: error });
  }
}

function buildProxyDispatcher({ url, kind, authorization }: ParsedProxyUrl, options: ResolvedUpstreamOptions): Dispatcher {
  if (kind === 'connect') {
    // The credentials go as an explicit token: ProxyAgent would send them only when both user and password are set.
    const uri = new URL(url.href);
    uri.username = '';
    uri.password = '';
    return new ProxyAgent({
      uri: uri.href,
      ...(authorization !== undefined ? { token: authorization } : {}),
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
