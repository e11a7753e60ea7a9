import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Test } from 'tap';
import { WebSocket, WebSocketServer, type ClientOptions } from 'ws';
import { seedRoute, startDataPlane, type Gateway } from './data-plane-harness.ts';
import { eventually } from './dataplane-scenarios.ts';

export interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A WebSocket upstream. Each client frame is echoed (text as `echo:<text>`), unless `onMessage`
 * answers it instead, with the session's TCP socket at hand. `refuse` may answer an upgrade
 * with an HTTP response instead; `greeting` is sent the moment a session opens;
 * `selectProtocol` picks the subprotocol from those offered (false: none); `handshakeHeaders`
 * gives header lines (`name: value`) to add to the 101. The close code of
 * each session's upstream side is kept in `closeCodes`, in the order sessions end.
 */
export async function startWsUpstream(
  o: {
    refuse?: (req: IncomingMessage) => Refusal | undefined;
    greeting?: string;
    selectProtocol?: (offered: Set<string>) => string | false;
    handshakeHeaders?: (req: IncomingMessage) => string[];
    onSession?: (ws: WebSocket) => void;
    onMessage?: (ws: WebSocket, text: string, socket: Socket) => void;
  } = {},
) {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true, ...(o.selectProtocol ? { handleProtocols: o.selectProtocol } : {}) });
  const { handshakeHeaders } = o;
  if (handshakeHeaders) wss.on('headers', (lines, req) => lines.push(...handshakeHeaders(req)));
  const seen: IncomingMessage[] = [];
  const closeCodes: number[] = [];
  let connections = 0;
  const session = (ws: WebSocket, socket: Socket) => {
    o.onSession?.(ws);
    if (o.greeting !== undefined) ws.send(o.greeting);
    const { onMessage } = o;
    if (onMessage) ws.on('message', (data) => onMessage(ws, data.toString(), socket));
    else ws.on('message', (data, isBinary) => ws.send(isBinary ? data : `echo:${data.toString()}`, { binary: isBinary }));
    ws.on('close', (code) => closeCodes.push(code));
  };
  server.on('connection', () => connections++);
  server.on('upgrade', (req, socket, head) => {
    seen.push(req);
    const refusal = o.refuse?.(req);
    if (refusal) {
      const headers = Object.entries({ ...refusal.headers, 'content-length': String(Buffer.byteLength(refusal.body)), connection: 'close' }).map(([k, v]) => `${k}: ${v}\r\n`);
      socket.end(`HTTP/1.1 ${refusal.status} Refused\r\n${headers.join('')}\r\n${refusal.body}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => session(ws, socket as Socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    closeCodes,
    /** TCP connections accepted, whether or not an upgrade followed. */
    connections: () => connections,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The code and reason `ws` closes with. */
export function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
}

export function connect(url: string, protocols: string[] = []): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** The status an upgrade gets: 101 when it opened (the session is then dropped), else the HTTP answer's, -1 on an error. */
export function upgradeStatus(url: string, options?: ClientOptions): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, options);
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', () => resolve(-1));
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
  });
}

/**
 * The HTTP answer to an upgrade that was not accepted. An upgrade that opens rejects, unless
 * `openedAs101` is set: the session is then dropped and the answer is 101.
 */
export function upgradeAnswer(url: string, o?: { protocols?: string[]; openedAs101?: false }): Promise<Refusal>;
export function upgradeAnswer(url: string, o: { protocols?: string[]; openedAs101: true }): Promise<Refusal | 101>;
export function upgradeAnswer(url: string, o: { protocols?: string[]; openedAs101?: boolean } = {}): Promise<Refusal | 101> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, o.protocols ?? []);
    ws.on('error', reject);
    ws.once('open', () => {
      ws.terminate();
      if (o.openedAs101) resolve(101);
      else reject(new Error('the upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
        ws.terminate();
      });
    });
  });
}

/** The next frame the client receives, with whether it came as binary. */
export function nextFrame(client: WebSocket): Promise<{ data: Buffer; binary: boolean }> {
  return new Promise((r) => client.once('message', (data: Buffer, binary) => r({ data, binary })));
}

/** The key's log record with `status`, once it is written. */
export async function logOf(gw: Gateway, accessKeyId: number, status: number) {
  return eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: accessKeyId }, { limit: 10 })).items.find((r) => r.status === status);
  }, `the log record with status ${status}`);
}

export const REALTIME_PATH = '/v1/audio/transcriptions/realtime';

/** The data plane with a realtime route (x-suite on ch03) to `baseUrl`; closed when the test ends. `recordBody`: the key's record_request_body. */
export async function realtimeRoute(t: Test, baseUrl: string, o: { upstreamKeys?: string[]; options?: Parameters<typeof startDataPlane>[0]; quota?: Parameters<typeof seedRoute>[1]['quota']; recordBody?: boolean } = {}) {
  const gw = await startDataPlane(o.options);
  t.teardown(() => gw.close());
  const seeded = await seedRoute(gw.store, { channel: 'ch03', baseUrl, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], upstreamKeys: o.upstreamKeys, quota: o.quota, recordBody: o.recordBody });
  return { gw, ...seeded, wsUrl: `${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${seeded.keyValue}` };
}

/**
 * A realtime session through the data plane (`options`) to an upstream (`upstream`), all closed
 * when the test ends: `client` is the client's side, `up` the upstream's.
 */
export async function openSession(t: Test, o: { upstream?: Omit<NonNullable<Parameters<typeof startWsUpstream>[0]>, 'onSession'>; options?: Parameters<typeof startDataPlane>[0] } = {}) {
  let session: WebSocket | undefined;
  const upstream = await startWsUpstream({ ...o.upstream, onSession: (ws) => (session = ws) });
  t.teardown(() => upstream.close());
  const route = await realtimeRoute(t, upstream.url, { options: o.options });
  const client = await connect(route.wsUrl);
  t.teardown(() => client.terminate());
  const up = await eventually(() => session, 'the upstream session');
  return { ...route, upstream, client, up };
}
