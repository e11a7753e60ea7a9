import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';

export interface Socks5Server {
  url: string;
  port: number;
  /** Destinations requested through the proxy, as host:port. */
  destinations: string[];
  /** Bytes the client sent after a chosen `reply` (see startSocks5Server). */
  bytesAfterReply(): number;
  close(): Promise<void>;
}

export interface Socks5ServerOptions {
  /** Sent in answer to CONNECT instead of connecting to the destination, as a broken proxy would. */
  reply?: Buffer;
}

/** A minimal SOCKS5 server (RFC 1928, CONNECT only, optional RFC 1929 user/password). */
export async function startSocks5Server(auth?: { username: string; password: string }, options: Socks5ServerOptions = {}): Promise<Socks5Server> {
  const destinations: string[] = [];
  const afterReply = { bytes: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    handshake(client, auth, destinations, options.reply, afterReply).catch(() => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const userinfo = auth === undefined ? '' : `${encodeURIComponent(auth.username)}:${encodeURIComponent(auth.password)}@`;
  return {
    url: `socks5://${userinfo}127.0.0.1:${port}`,
    port,
    destinations,
    bytesAfterReply: () => afterReply.bytes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function read(socket: Socket, n: number): Promise<Buffer> {
  // An empty field (RFC 1929 allows a zero-length password): socket.read(0) never returns data.
  if (n === 0) return Buffer.alloc(0);
  for (;;) {
    const chunk = socket.read(n) as Buffer | null;
    if (chunk !== null) return chunk;
    if (socket.readableEnded || socket.destroyed) throw new Error('client went away');
    await once(socket, 'readable');
  }
}

async function handshake(
  client: Socket,
  auth: { username: string; password: string } | undefined,
  destinations: string[],
  reply: Buffer | undefined,
  afterReply: { bytes: number },
) {
  const [version, methodCount] = await read(client, 2);
  if (version !== 5) throw new Error('not socks5');
  const methods = [...(await read(client, methodCount!))];
  const wanted = auth === undefined ? 0x00 : 0x02;
  if (!methods.includes(wanted)) {
    client.end(Buffer.from([5, 0xff]));
    return;
  }
  client.write(Buffer.from([5, wanted]));
  if (auth !== undefined) {
    const [, userLength] = await read(client, 2);
    const username = (await read(client, userLength!)).toString();
    const [passwordLength] = await read(client, 1);
    const password = (await read(client, passwordLength!)).toString();
    const ok = username === auth.username && password === auth.password;
    client.write(Buffer.from([1, ok ? 0 : 1]));
    if (!ok) {
      client.end();
      return;
    }
  }
  const [, command, , addressType] = await read(client, 4);
  let host: string;
  if (addressType === 1) host = [...(await read(client, 4))].join('.');
  else if (addressType === 3) host = (await read(client, (await read(client, 1))[0]!)).toString();
  else if (addressType === 4) host = (await read(client, 16)).toString('hex').replace(/(.{4})(?!$)/g, '$1:');
  else throw new Error('bad address type');
  const port = (await read(client, 2)).readUInt16BE(0);
  if (command !== 1) {
    client.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
    return;
  }
  destinations.push(`${host}:${port}`);
  if (reply !== undefined) {
    client.write(reply);
    client.on('data', (chunk: Buffer) => (afterReply.bytes += chunk.length));
    return;
  }
  const upstream = connect({ host, port });
  upstream.on('error', () => {
    client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
  });
  upstream.once('connect', () => {
    client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
}
