import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocketServer } from 'ws';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { deferred, withTimeout } from './helpers/dataplane-scenarios.ts';
import { REALTIME_PATH, upgradeStatus } from './helpers/ws-upstream.ts';

// As failover-after-config-change.test.ts, for a WebSocket upgrade: a credential changed while
// an earlier handshake waits on its upstream is, once acknowledged, not tried as it was.

const A = 'sk-ws-failover-first-00000001';
const B = 'sk-ws-failover-second-0000002';
const B_NEW = 'sk-ws-failover-rotated-000003';

/** A realtime upstream that opens every session, except A's while `holdA`: answered 429 once the test releases it. */
async function heldWsUpstream(t: Test) {
  const state = { holdA: false, arrived: deferred(), release: deferred() };
  const seen: string[] = [];
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const secret = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    seen.push(secret);
    if (secret === A && state.holdA) {
      state.arrived.resolve();
      void state.release.promise.then(() => socket.end('HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}'));
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => ws.on('error', () => {}));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state, seen };
}

async function importOne(gw: Gateway, groupId: number, secret: string): Promise<number> {
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: secret });
  return imported.json.data.created[0].id as number;
}

/** A realtime Group holding A then B, both secrets cached by a session each (round robin: A, then B); the next session starts with A. */
async function realtimeGroup(t: Test) {
  const up = await heldWsUpstream(t);
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['voice'], { channel: 'ch03', base_url: up.url });
  await importOne(gw, groupId, A);
  const b = await importOne(gw, groupId, B);
  const key = await seedAccessKey(gw, { protocols: ['x-suite'] });
  const wsUrl = `${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${key.value}`;
  t.equal(await upgradeStatus(wsUrl), 101);
  t.equal(await upgradeStatus(wsUrl), 101);
  t.same(up.seen, [A, B], 'warm: both secrets were used, so both are cached');
  return { up, gw, wsUrl, groupId, bPath: `/api/groups/${groupId}/credentials/${b}` };
}

async function changeWhileHeld(t: Test, o: Awaited<ReturnType<typeof realtimeGroup>>, change: () => Promise<{ status: number }>) {
  const before = o.up.seen.length;
  o.up.state.holdA = true;
  const status = upgradeStatus(o.wsUrl);
  await withTimeout(o.up.state.arrived.promise, 5000, 'the first handshake at the upstream');
  t.equal((await change()).status, 200, 'the change is acknowledged');
  o.up.state.release.resolve();
  return { status: await withTimeout(status, 5000, 'the held upgrade'), seen: o.up.seen.slice(before) };
}

t.test('a credential rotated while the first handshake waits: failover opens the session with the new secret', async (t) => {
  const o = await realtimeGroup(t);
  o.gw.clock.advance(1000);
  const held = await changeWhileHeld(t, o, () => o.gw.api('PATCH', o.bPath, { body: { fields: { api_key: B_NEW } } }));
  t.equal(held.status, 101);
  t.same(held.seen, [A, B_NEW], 'the upstream saw the new secret only');
});

t.test('a credential deleted while the first handshake waits is not failed over to: the client gets the 429', async (t) => {
  const o = await realtimeGroup(t);
  const held = await changeWhileHeld(t, o, () => o.gw.api('DELETE', o.bPath));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'the deleted secret never reached the upstream again');
});

t.test('a Group whose base_url changes while the first handshake waits: failover opens the session at the new address', async (t) => {
  const o = await realtimeGroup(t);
  const moved = await heldWsUpstream(t);
  const held = await changeWhileHeld(t, o, () => o.gw.api('PUT', `/api/groups/${o.groupId}/settings`, { body: { base_url: moved.url } }));
  t.equal(held.status, 101);
  t.same(held.seen, [A], 'the old address saw only the handshake made before the change');
  t.same(moved.seen, [B], 'the new address got the next handshake');
});

t.test('a Group that stops mapping the model while the first handshake waits is not failed over to', async (t) => {
  const o = await realtimeGroup(t);
  const held = await changeWhileHeld(t, o, () => o.gw.api('PUT', `/api/groups/${o.groupId}/models`, { body: { models: [{ external: 'another-voice' }] } }));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'no credential of a Group that no longer serves the model was tried');
});
