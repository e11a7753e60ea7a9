import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  url: string;
  port: number;
  /** TCP connections accepted so far. */
  connections(): number;
  /** Remote addresses (host:port) of accepted connections. */
  peers: string[];
  /** The server itself, for what a test adds (an upgrade handler). */
  server: Server;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A self-signed certificate for 127.0.0.1 and localhost, valid 2000 to 2126 (fixtures/tls-identity/README.md); tests only. */
export const loopbackCert = {
  cert: readFileSync(new URL('../fixtures/loopback-cert.pem', import.meta.url)),
  key: readFileSync(new URL('../fixtures/loopback-key.pem', import.meta.url)),
};

/** Plain HTTP, or TLS with loopbackCert (`tls: true`) or with the certificate and key given. */
export async function startLoopbackServer(handler: Handler, options: { tls?: boolean | { cert: Buffer; key: Buffer } } = {}): Promise<LoopbackServer> {
  const server: Server = options.tls ? createTlsServer(options.tls === true ? { ...loopbackCert } : options.tls, handler) : createServer(handler);
  let accepted = 0;
  const peers: string[] = [];
  server.on(options.tls ? 'secureConnection' : 'connection', (socket) => {
    accepted++;
    peers.push(`${socket.remoteAddress}:${socket.remotePort}`);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    connections: () => accepted,
    peers,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function readAll(stream: AsyncIterable<Buffer | string>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}
