import { mkdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { AUTH_KEY, startGateway, type Gateway } from './support/gateway.ts';

// A client that leaves a management request mid-body is ordinary client behaviour, not a failure
// of the gateway: it logs nothing (a stack trace means a bug), as the data plane logs nothing for
// it. A real failure still logs its stack.

const STACK = /\n\s+at /;

function head(idempotencyKey: string, framing: string): string {
  return (
    `POST /api/groups HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${AUTH_KEY}\r\nContent-Type: application/json\r\n` +
    `Idempotency-Key: ${idempotencyKey}\r\n${framing}\r\nExpect: 100-continue\r\n\r\n`
  );
}

interface Way {
  name: string;
  framing: string;
  /** The part of the body sent before leaving. */
  sent: string;
  leave: (socket: Socket) => void;
}

/** Sends a POST /api/groups, waits for the gateway's 100 (it has the request), sends part of its body and leaves as `way` does. */
async function leaveMidBody(gw: Gateway, idempotencyKey: string, way: Way): Promise<void> {
  const socket = connect(gw.server.port, '127.0.0.1');
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const continued = new Promise<void>((resolve) => socket.on('data', (d: Buffer) => d.toString('latin1').startsWith('HTTP/1.1 100') && resolve()));
  socket.write(head(idempotencyKey, way.framing));
  await withTimeout(continued, 5000, 'the 100 Continue');
  await new Promise<void>((resolve) => socket.write(way.sent, () => resolve()));
  way.leave(socket);
  await withTimeout(closed, 5000, 'the connection closing');
}

t.test('a client leaving mid-body logs nothing, however it leaves; a real failure logs its stack', async (t) => {
  const logged: string[] = [];
  const gw = await startGateway(t, { log: (line) => logged.push(line) });
  // What the start itself says (where the AUTH_KEY comes from) is not the requests' concern.
  logged.length = 0;
  const declared = 'Content-Length: 100';
  const ways: Way[] = [
    { name: 'destroyed', framing: declared, sent: '{"name":', leave: (socket) => socket.destroy() },
    // Its half of the connection ended mid-body: node's parser fails (HPE_INVALID_EOF_STATE).
    { name: 'half-closed', framing: declared, sent: '{"name":', leave: (socket) => socket.end() },
    { name: 'reset (ECONNRESET)', framing: declared, sent: '{"name":', leave: (socket) => socket.resetAndDestroy() },
    // A chunk size that is no number: node answers its own 400 and closes the connection.
    { name: 'broken chunked framing', framing: 'Transfer-Encoding: chunked', sent: '8\r\n{"name":\r\nzz\r\n', leave: () => {} },
  ];
  let n = 0;
  for (const way of ways) {
    await leaveMidBody(gw, `5f1c7a2e-8b4d-4e5f-9a6b-1c2d3e4f5a6${n++}`, way);
    // Round trips after it: the server has handled the connection's end by the time they are answered.
    for (let i = 0; i < 3; i++) t.equal((await gw.api('GET', '/api/auth/session')).status, 200);
    t.same(logged, [], `${way.name}: nothing logged`);
  }
  t.same((await gw.api('GET', '/api/groups')).json.data, [], 'no Group was created');

  // steno writes through .config.json.tmp; a directory in its place makes every write fail.
  mkdirSync(path.join(gw.dataDir, '.config.json.tmp'));
  const res = await gw.create('/api/groups', { name: 'x', channel: 'ch02' });
  t.equal(res.status, 500);
  t.equal(logged.length, 1, 'the real failure is logged');
  t.match(logged[0], /^management POST \/api\/groups failed: .*EISDIR/);
  t.match(logged[0], STACK, 'with its stack');
});
