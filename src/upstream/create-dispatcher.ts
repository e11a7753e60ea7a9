import { Agent, Client, Pool, ProxyAgent, buildConnector, type Dispatcher } from 'undici';
import type { ResolvedUpstreamOptions } from './upstream-options.ts';
import { socksConnector } from './socks-connector.ts';
import { InvalidProxyUrlError, parseProxyUrl, type ParsedProxyUrl } from './parse-proxy-url.ts';
import { proxyTunnelPool } from './proxy-tunnel-pool.ts';
import { redactUrl } from './redact-url.ts';
import { watchReuse } from './reused-connection.ts';

/**
 * Client objects without a connection a pool may hold past as many as hold one, before it is
 * retired: enough that a pool whose concurrency wanders a little never is.
 */
const RETIRE_SLACK = 32;

/**
 * A keep-alive pool for one origin, no proxy. undici's Pool keeps every Client it made, with
 * its socket or without, for its life: after a burst of N requests at once, N Client objects
 * (about 2.7 KB each). `retire` is called once, from the pool's disconnect event, when the
 * Clients without a connection outnumber those with one by RETIRE_SLACK and no request waits
 * for a connection; the caller then lets the pool go (new requests get a new one) and closes
 * it. Counted from connection events, so a request costs nothing more.
 */
export function createOriginPool(origin: string, options: ResolvedUpstreamOptions, retire: () => void): Dispatcher {
  const clients = new Set<Dispatcher>();
  let connected = 0;
  let retired = false;
  const pool = new Pool(origin, {
    connections: options.connections,
    ...keepAlive(options),
    connect: watchReuse(buildConnector({ ...options.tls, timeout: options.connectTimeoutMs })),
    factory: (url, clientOptions) => {
      const client = new Client(url, clientOptions);
      clients.add(client);
      return client;
    },
  });
  // The pool's events name [pool, client]; a Client whose connection failed leaves the pool.
  pool.on('connect', () => void connected++);
  pool.on('connectionError', (_origin, targets) => void clients.delete(targets[targets.length - 1]!));
  pool.on('disconnect', () => {
    connected--;
    if (retired || clients.size - connected <= connected + RETIRE_SLACK) return;
    // Clients still connecting count as without a connection: while requests wait on them (a
    // burst that began as a connection closed), retiring would throw the burst's connections
    // away. A later disconnect looks again. `stats` walks the Clients, so it comes last.
    if (pool.stats.pending > 0) return;
    retired = true;
    retire();
  });
  return pool;
}

/**
 * Idle connections close at the configured keep-alive timeout. An upstream's `Keep-Alive:
 * timeout=N` hint may shorten it (undici takes N less 2 s) but not lengthen it: undici would
 * otherwise honour hints up to its keepAliveMaxTimeout, 10 minutes.
 */
function keepAlive(options: ResolvedUpstreamOptions): { keepAliveTimeout: number; keepAliveMaxTimeout: number } {
  return { keepAliveTimeout: options.keepAliveTimeoutMs, keepAliveMaxTimeout: options.keepAliveTimeoutMs };
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
      ...keepAlive(options),
      clientFactory: proxyTunnelPool(options.connectTimeoutMs),
      factory: watchedTunnels,
      proxyTls: { timeout: options.connectTimeoutMs },
      requestTls: { ...options.tls, timeout: options.connectTimeoutMs },
    });
  }
  return new Agent({
    connections: options.connections,
    ...keepAlive(options),
    connect: watchReuse(
      socksConnector(url, {
        connectTimeoutMs: options.connectTimeoutMs,
        ...(options.tls !== undefined ? { tls: options.tls } : {}),
      }),
    ),
  });
}

/**
 * The dispatchers to each origin behind an HTTP proxy, as undici's own ProxyAgent factory makes
 * them (a Client for one connection, else a Pool), with their tunnelled connections watched.
 */
function watchedTunnels(origin: string | URL, options: object): Dispatcher {
  const given = options as Pool.Options & { connect: buildConnector.connector };
  const watched = { ...given, connect: watchReuse(given.connect) };
  return given.connections === 1 ? new Client(origin, watched) : new Pool(origin, watched);
}
