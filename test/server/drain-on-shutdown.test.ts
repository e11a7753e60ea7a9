import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { LINGER_CLOSE_MS } from '../../src/http/drain-after-answer.ts';
import { eventually, withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';

// A connection that reads the rest of a body after its answer (given mid-upload) holds no
// request: a shutdown ends it at once instead of waiting for the grace to run out.

/** Far beyond this file's own timeout: only ending the connection at once lets close() finish in time. */
const GRACE_MS = 30_000;
t.setTimeout(15_000);

t.test('a shutdown ends a connection still draining the body of a request answered mid-upload, rather than waiting for the grace', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-drain-shutdown-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await createServer({ dataDir, port: 0, authKey: 'drain-shutdown-auth-key-0123456789abcdef', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {}, shutdownGraceMs: GRACE_MS });
  t.teardown(() => server.close());
  const socket = connect(server.port, '127.0.0.1');
  t.teardown(() => void socket.destroy());
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{"model":');
  // The body keeps coming, a byte at a time, well within node's keep-alive timeout (5 s).
  const trickle = setInterval(() => socket.destroyed || socket.write(' '), 500);
  t.teardown(() => clearInterval(trickle));
  await eventually(() => (/\r\n\r\n/.test(received) ? true : undefined), 'the answer given mid-upload');
  t.match(received, /^HTTP\/1\.1 401 /, 'the bad key was refused before its body ended');
  t.notMatch(received, /\r\nconnection: close\r\n/i, 'on a connection kept to drain the body');

  await server.close();
  await closed;
  t.pass('the shutdown finished before its grace, the draining connection ended');
  t.equal(received.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'the client had its one answer');
});

t.test('a shutdown ends a connection lingering after an answer that said connection: close mid-upload, rather than waiting for its deadline', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-linger-shutdown-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await createServer({ dataDir, port: 0, authKey: 'drain-shutdown-auth-key-0123456789abcdef', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {}, shutdownGraceMs: GRACE_MS });
  t.teardown(() => server.close());
  // Half-open, as a client still sending its body after the gateway's end of the answer.
  const socket = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true });
  t.teardown(() => void socket.destroy());
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  // Declared far beyond what a refusal drains: the answer says connection: close.
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${1024 * 1024 * 1024}\r\n\r\n{"model":`);
  const trickle = setInterval(() => socket.destroyed || socket.write(' '), 200);
  t.teardown(() => clearInterval(trickle));
  await withTimeout(ended, GRACE_MS, 'the answer and the end of the gateway side');
  t.match(received, /^HTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i, 'answered with connection: close');
  t.equal(socket.destroyed, false, 'the connection lingers, the body still read');

  // Well within the lingering deadline: only ending the connection at once lets close() finish in time.
  await withTimeout(server.close(), LINGER_CLOSE_MS / 2, 'the shutdown');
  await withTimeout(closed, LINGER_CLOSE_MS / 2, 'the connection to end');
  t.pass('the shutdown ended the lingering connection');
});
