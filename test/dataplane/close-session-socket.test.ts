import type { AddressInfo } from 'node:net';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { closeSessionSocket } from '../../src/dataplane/close-session-socket.ts';
import { closeOf } from './helpers/ws-upstream.ts';

t.test('a reason ws refuses (over 123 bytes) closes with the code alone, without a throw', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  t.teardown(() => new Promise<void>((r) => wss.close(() => r())));
  await new Promise<void>((r) => wss.once('listening', r));
  const serverSide = new Promise<WebSocket>((r) => wss.once('connection', r));
  const peer = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  t.teardown(() => peer.terminate());
  const peerClose = closeOf(peer);
  const ws = await serverSide;
  t.doesNotThrow(() => closeSessionSocket(ws, 4000, 'x'.repeat(124)));
  t.same(await peerClose, { code: 4000, reason: '' }, 'the peer gets the code');
});
