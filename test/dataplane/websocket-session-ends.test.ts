import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { startDataPlane, seedRoute } from './helpers/data-plane-harness.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';

/**
 * A WebSocket upstream: `onMessage` answers each client frame (default: nothing), with the
 * session's TCP socket at hand; the close code of each session's upstream side is kept in
 * `closeCodes`, in the order sessions end.
 */
async function startWsUpstream(onMessage: (ws: WebSocket, text: string, socket: Socket) => void = () => {}) {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  const closeCodes: number[] = [];
  server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => onMessage(ws, data.toString(), socket as Socket));
      ws.on('close', (code) => closeCodes.push(code));
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    closeCodes,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const REALTIME_PATH = '/v1/audio/transcriptions/realtime';

/** The data plane with a realtime route (x-suite on ch03) to `baseUrl`; closed when the test ends. */
async function realtimeRoute(t: Test, baseUrl: string, quota?: Parameters<typeof seedRoute>[1]['quota']) {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const seeded = await seedRoute(gw.store, { channel: 'ch03', baseUrl, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], quota });
  return { gw, ...seeded, wsUrl: `${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${seeded.keyValue}` };
}

function connect(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function closeOf(ws: WebSocket): Promise<number> {
  return new Promise((r) => ws.once('close', (code) => r(code)));
}

function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', () => resolve(-1));
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
  });
}

/** The key's session records (status 101), once `count` of them are written. */
async function sessionRecords(gw: Awaited<ReturnType<typeof startDataPlane>>, accessKeyId: number, count: number) {
  return eventually(async () => {
    await gw.logs.flush();
    const items = (await gw.logs.list({ access_key_id: accessKeyId }, { limit: 10 })).items.filter((r) => r.status === 101);
    return items.length === count ? items : undefined;
  }, `${count} session records`);
}

t.test('usage the upstream sends while it answers the client\'s close is in the session\'s record and counts toward the key\'s quota', async (t) => {
  // The upstream answers the client's frame with a transcription carrying 90 + 30 tokens, sent
  // once the gateway's close frame (the client's close passed on) is at its socket, unread:
  // an upstream whose last event crosses the close.
  const upstream = await startWsUpstream(async (ws, _text, socket) => {
    ws.pause();
    await eventually(() => (socket.readableLength > 0 ? true : undefined), 'the gateway\'s close frame at the upstream');
    ws.send(JSON.stringify({ type: 'transcription.done', text: 'final words', usage: { prompt_tokens: 90, completion_tokens: 30, total_tokens: 120 } }));
    ws.resume();
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { total: { tokens: 100 } });
  const client = await connect(wsUrl);
  const clientClose = closeOf(client);
  client.send('last audio');
  client.close(1000, 'done');
  t.equal(await clientClose, 1000);
  const [record] = await sessionRecords(gw, key.id, 1);
  t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
  t.same(upstream.closeCodes, [1000], 'the upstream got the client\'s code');
  t.equal(await upgradeStatus(wsUrl), 429, 'the session\'s 120 tokens used up the key\'s 100');
});

t.test('a side that drops its connection without a close frame: the other side is closed with 1014 or 1011, never 1000', async (t) => {
  const upstream = await startWsUpstream((ws, text) => {
    if (text === 'drop') ws.terminate();
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);

  // The upstream drops: the client is told "bad gateway", and the record says the upstream broke off.
  const first = await connect(wsUrl);
  const firstClose = closeOf(first);
  first.send('drop');
  t.equal(await firstClose, 1014);
  const [broken] = await sessionRecords(gw, key.id, 1);
  t.match(broken, { status: 101, error_code: 'upstream_stream_broken', client_aborted: false });

  // The client drops: the upstream is told "internal error", and the record counts a client abort.
  const second = await connect(wsUrl);
  second.terminate();
  t.equal(await eventually(() => upstream.closeCodes[1], 'the second session\'s upstream side closed'), 1011);
  const records = await sessionRecords(gw, key.id, 2);
  const aborted = records.find((r) => r.request_id !== broken!.request_id);
  t.match(aborted, { status: 101, error_code: null, client_aborted: true });
});

t.test('a client that closes its session with a close frame ended it, whatever its code: not a client abort', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
  const closes: [number?, string?][] = [[], [1001, 'navigating'], [4000, 'bye']];
  for (const [i, [code, reason]] of closes.entries()) {
    const client = await connect(wsUrl);
    client.close(code, reason);
    await closeOf(client);
    await eventually(() => (upstream.closeCodes.length === i + 1 ? true : undefined), `session ${i + 1}'s upstream side closed`);
  }
  // A close frame with no code (a browser's ws.close()) is a normal end: 1000 upstream.
  t.same(upstream.closeCodes, [1000, 1001, 4000]);
  const records = await sessionRecords(gw, key.id, closes.length);
  t.same(
    records.map((r) => [r.client_aborted, r.error_code]),
    closes.map(() => [false, null]),
  );
});
