import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';

export interface HttpConnectProxy {
  url: string;
  port: number;
  /** CONNECT targets accepted, as host:port. */
  tunnels: string[];
  /** CONNECT requests refused for bad or missing credentials. */
  refused: number;
  close(): Promise<void>;
}

/** An HTTP proxy that tunnels with CONNECT, optionally requiring Basic proxy credentials. */
export async function startHttpConnectProxy(auth?: { username: string; password: string }): Promise<HttpConnectProxy> {
  const expected = auth === undefined ? undefined : `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  const sockets = new Set<Socket>();
  const state = { tunnels: [] as string[], refused: 0 };
  const server = createServer((_req, res) => {
    res.writeHead(405).end();
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    client.on('error', () => {});
    if (expected !== undefined && req.headers['proxy-authorization'] !== expected) {
      state.refused++;
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const [host, port] = splitHostPort(req.url ?? '');
    state.tunnels.push(`${host}:${port}`);
    const upstream = connect({ host, port });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'));
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const userinfo = auth === undefined ? '' : `${encodeURIComponent(auth.username)}:${encodeURIComponent(auth.password)}@`;
  return {
    url: `http://${userinfo}127.0.0.1:${port}`,
    port,
    get tunnels() {
      return state.tunnels;
    },
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function splitHostPort(authority: string): [string, number] {
  const colon = authority.lastIndexOf(':');
  const host = authority.slice(0, colon).replace(/^\[|\]$/g, '');
  return [host, Number(authority.slice(colon + 1))];
}
