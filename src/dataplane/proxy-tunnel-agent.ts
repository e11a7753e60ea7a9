import { Agent as HttpAgent, type ClientRequestArgs } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { Client } from 'undici';
import { parseProxyUrl, proxyConnectError, socksConnector } from '../upstream/index.ts';

/** As the upstream client's connect timeout: reaching the proxy and opening the tunnel. */
const TUNNEL_TIMEOUT_MS = 10_000;

type OpenTunnel = (host: string, port: number) => Promise<Duplex>;
type ConnectionCallback = (error: Error | null, socket?: Duplex) => void;

/**
 * A Node http(s).Agent whose connections go through a managed proxy, for the `ws` client, which
 * takes an agent where the HTTP data plane takes an undici dispatcher. SOCKS5 tunnels come from
 * the same connector the HTTP data plane uses; HTTP(S) proxies are asked for a CONNECT tunnel by
 * an undici Client, as undici's ProxyAgent asks them. TLS to a `wss` upstream runs inside the
 * tunnel.
 */
export function proxyTunnelAgent(proxy: string, secure: boolean): HttpAgent {
  const open = tunnelOpener(proxy);
  const createConnection = (options: ClientRequestArgs & ConnectionOptions, callback: ConnectionCallback): undefined => {
    open(options.host ?? 'localhost', Number(options.port)).then(
      (socket) => callback(null, secure ? tlsConnect({ ...options, socket }) : socket),
      (error: Error) => callback(error),
    );
    return undefined;
  };
  const agent = secure ? new HttpsAgent() : new HttpAgent();
  // The callback form of createConnection, which http.Agent supports for asynchronous sockets.
  (agent as unknown as { createConnection: typeof createConnection }).createConnection = createConnection;
  return agent;
}

function tunnelOpener(proxy: string): OpenTunnel {
  const { url, kind, authorization } = parseProxyUrl(proxy);
  if (kind === 'connect') return (host, port) => connectTunnel(url, authorization, host, port);
  const connector = socksConnector(url, { connectTimeoutMs: TUNNEL_TIMEOUT_MS });
  return (host, port) =>
    new Promise((resolve, reject) => {
      connector({ protocol: 'http:', hostname: host, port: String(port) }, (error, socket) => (error ? reject(error) : resolve(socket as Socket)));
    });
}

async function connectTunnel(proxy: URL, authorization: string | undefined, host: string, port: number): Promise<Duplex> {
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const headers: Record<string, string> = { host: authority };
  if (authorization !== undefined) headers['proxy-authorization'] = authorization;
  const client = new Client(proxy.origin, { connect: { timeout: TUNNEL_TIMEOUT_MS }, headersTimeout: TUNNEL_TIMEOUT_MS });
  try {
    // As the HTTP data plane's proxyTunnelPool: a CONNECT with no answer is the proxy's failure, not the upstream's.
    const { statusCode, socket } = await client.connect({ path: authority, headers }).catch((error: unknown) => {
      throw proxyConnectError(error);
    });
    if (statusCode !== 200) {
      socket.destroy();
      // undici ProxyAgent's wording, which classifyUpstreamError reads as a connection never made.
      throw new Error(`Proxy response (${statusCode}) !== 200 when HTTP Tunneling`);
    }
    return socket;
  } finally {
    // The tunnel socket is detached from the client once CONNECT succeeds; closing leaves it open.
    void client.close();
  }
}
