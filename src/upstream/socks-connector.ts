import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import { SocksClient } from 'socks';
import { errors, type buildConnector } from 'undici';

export const SOCKS_CONNECT_FAILED = 'SOCKS_CONNECT_FAILED';

/** A SOCKS5 destination name is sent with a one-byte length (RFC 1928). */
const SOCKS5_HOST_MAX_BYTES = 255;

export interface SocksConnectorOptions {
  connectTimeoutMs: number;
  /** TLS options for https origins reached through the proxy (e.g. an extra CA). */
  tls?: ConnectionOptions;
}

/**
 * An undici `connect` function that opens each upstream connection through a SOCKS5 proxy,
 * then TLS on top for https origins. The destination host name is sent to the proxy, so
 * `socks5://` and `socks5h://` both resolve names at the proxy.
 */
export function socksConnector(proxyUrl: URL, options: SocksConnectorOptions): buildConnector.connector {
  const userId = decodeURIComponent(proxyUrl.username);
  const password = decodeURIComponent(proxyUrl.password);
  const proxy = {
    host: unbracket(proxyUrl.hostname),
    port: Number(proxyUrl.port) || 1080,
    type: 5 as const,
    ...(userId !== '' ? { userId } : {}),
    ...(password !== '' ? { password } : {}),
  };
  return (target, callback) => {
    const secure = target.protocol === 'https:';
    const host = unbracket(target.hostname);
    // No resolver takes such a name either: failed as getaddrinfo fails it on a direct connection, the upstream address's fault, not the proxy's.
    if (Buffer.byteLength(host) > SOCKS5_HOST_MAX_BYTES) {
      callback(Object.assign(new Error(`upstream host name over ${SOCKS5_HOST_MAX_BYTES} bytes, more than SOCKS5 can send`), { code: 'EINVAL' }), null);
      return;
    }
    // undici times only the connections it opens itself: one deadline for the SOCKS negotiation and the TLS handshake.
    const deadline = Date.now() + options.connectTimeoutMs;
    // Tagged so that failover can tell the upstream never saw the request.
    const failed = (error: Error): void =>
      callback(Object.assign(new Error(`SOCKS5 proxy: ${error.message}`), { code: SOCKS_CONNECT_FAILED, cause: error }), null);
    SocksClient.createConnection({
      proxy,
      command: 'connect',
      destination: { host, port: Number(target.port) || (secure ? 443 : 80) },
      timeout: options.connectTimeoutMs,
    }).then(
      ({ socket, remoteHost }) => {
        // The socks package resolves a reply whose address type is none of RFC 1928's (1, 3, 4) as a
        // connection made, with no bound address: bytes that are no SOCKS5, so the proxy's failure.
        if (remoteHost === undefined) {
          socket.destroy();
          failed(new Error('reply with an unknown address type'));
          return;
        }
        socket.setNoDelay(true);
        socket.setKeepAlive(true, 60_000);
        if (!secure) {
          callback(null, socket);
          return;
        }
        upgradeToTls(socket, host, target.servername ?? host, options.tls, deadline - Date.now(), callback);
      },
      failed,
    );
  };
}

function upgradeToTls(
  socket: Socket,
  host: string,
  servername: string,
  tls: ConnectionOptions | undefined,
  timeoutMs: number,
  callback: buildConnector.Callback,
): void {
  const secured: TLSSocket = tlsConnect({
    ...tls,
    socket,
    // The name the certificate is checked against when no servername is sent (node's default is "localhost").
    host,
    // SNI must be a host name, never an IP address.
    ...(/^[\d.]+$|:/.test(servername) ? {} : { servername }),
    ALPNProtocols: ['http/1.1'],
  });
  let settled = false;
  const fail = (error: Error): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    secured.destroy();
    socket.destroy();
    callback(error, null);
  };
  // Coded as undici codes its own connect timeouts, so it is the upstream's connect timeout.
  const timer = setTimeout(() => fail(new errors.ConnectTimeoutError('Connect Timeout Error: TLS handshake through the SOCKS5 proxy')), Math.max(timeoutMs, 0));
  // Left on after a failure, so that a late error of the destroyed socket is not unhandled.
  secured.on('error', fail);
  secured.once('secureConnect', () => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    secured.off('error', fail);
    callback(null, secured);
  });
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
