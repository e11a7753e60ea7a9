import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { loopbackCert } from './loopback-server.ts';

/**
 * How a broken proxy treats each connection: closes it at once, closes it after reading what
 * the gateway sent (a CONNECT, a SOCKS5 greeting), resets it, answers bytes that are no proxy
 * protocol, holds it open and never answers (`silent`), or (`untrusted-tls`) serves TLS with a
 * certificate the gateway does not trust.
 */
export type ProxyBreakage = 'accept-then-close' | 'close-after-reading' | 'reset' | 'garbage' | 'silent' | 'untrusted-tls';

export interface BrokenProxy {
  /** An `http://` URL (`https://` for untrusted-tls); swap the scheme for a SOCKS5 one. */
  url: string;
  /** TCP connections accepted: a gateway retrying without end shows as a large count. */
  connections(): number;
  close(): Promise<void>;
}

const BEHAVIOUR: Record<Exclude<ProxyBreakage, 'untrusted-tls'>, (socket: Socket) => void> = {
  'accept-then-close': (socket) => socket.destroy(),
  'close-after-reading': (socket) => socket.once('data', () => socket.end()),
  reset: (socket) => socket.once('data', () => socket.resetAndDestroy()),
  garbage: (socket) => socket.once('data', () => socket.end('garbage\r\n\r\n')),
  silent: () => {},
};

export async function startBrokenProxy(breakage: ProxyBreakage): Promise<BrokenProxy> {
  const sockets = new Set<Socket>();
  const server: Server =
    breakage === 'untrusted-tls' ? createTlsServer({ ...loopbackCert }, (socket) => socket.end()) : createServer(BEHAVIOUR[breakage]);
  let accepted = 0;
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  // The gateway's side of a refused TLS handshake: nothing to do.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${breakage === 'untrusted-tls' ? 'https' : 'http'}://127.0.0.1:${port}`,
    connections: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
