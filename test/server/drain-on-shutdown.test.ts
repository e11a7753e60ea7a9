import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { LINGER_BYTES, LINGER_CLOSE_MS, SHUTDOWN_LINGER_MS } from '../../src/http/drain-after-answer.ts';
import { createKey, eventually, withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';

// A connection that reads the rest of a body after its answer (given mid-upload) holds no
// request: a shutdown half-closes it and ends it after a short linger (SHUTDOWN_LINGER_MS),
// instead of waiting for the grace or the usual lingering deadline, and without resetting it
// under a client still writing.

/** Far beyond each test's own timeout: only ending the connection at once lets close() finish in time. */
const GRACE_MS = 30_000;
/** Each test's bound, its own: one for the whole file was spent by the tests before the last on a loaded machine. */
const TEST_TIMEOUT = { timeout: 15_000 };

/**
 * The gateway with its data plane (its grace far past each test's timeout) and a raw client
 * connection to it, half-open unless `halfOpen` is false (as a client still sending its body
 * after the gateway's end of the answer); both ended at the test's end.
 */
async function gatewayAndClient(t: Test, halfOpen = true) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-drain-shutdown-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await createServer({ dataDir, port: 0, authKey: 'drain-shutdown-auth-key-0123456789abcdef', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {}, shutdownGraceMs: GRACE_MS });
  t.teardown(() => server.close());
  const socket = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: halfOpen });
  t.teardown(() => void socket.destroy());
  const client = { socket, received: '', error: undefined as Error | undefined, closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) };
  socket.on('data', (d: Buffer) => (client.received += d.toString('latin1')));
  socket.on('error', (e) => (client.error = e));
  return { server, client };
}

/** Writes `total` bytes of `piece`s, waiting for the socket to drain, until done or the socket closes. */
async function writeBody(socket: Socket, total: number, piece: Buffer): Promise<void> {
  for (let sent = 0; sent < total && !socket.destroyed; sent += piece.length) {
    if (!socket.write(piece)) await new Promise<void>((resolve) => {
      const done = () => { socket.off('drain', done).off('close', done); resolve(); };
      socket.once('drain', done).once('close', done);
    });
  }
}

t.test('a shutdown ends a connection still draining the body of a request answered mid-upload after a short linger, rather than waiting for the grace', TEST_TIMEOUT, async (t) => {
  const { server, client } = await gatewayAndClient(t, false);
  const { socket } = client;
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{"model":');
  // The body keeps coming, a byte at a time, well within node's keep-alive timeout (5 s).
  const trickle = setInterval(() => socket.destroyed || socket.write(' '), 500);
  t.teardown(() => clearInterval(trickle));
  await eventually(() => (/\r\n\r\n/.test(client.received) ? true : undefined), 'the answer given mid-upload');
  t.match(client.received, /^HTTP\/1\.1 401 /, 'the bad key was refused before its body ended');
  t.notMatch(client.received, /\r\nconnection: close\r\n/i, 'on a connection kept to drain the body');

  await server.close();
  await client.closed;
  t.pass('the shutdown finished before its grace, the draining connection ended');
  t.equal(client.received.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'the client had its one answer');
});

t.test('a shutdown ends a connection lingering after an answer that said connection: close mid-upload after a short linger, rather than waiting for its deadline', TEST_TIMEOUT, async (t) => {
  const { server, client } = await gatewayAndClient(t);
  const { socket } = client;
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  // Declared far beyond what a refusal drains: the answer says connection: close.
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${1024 * 1024 * 1024}\r\n\r\n{"model":`);
  const trickle = setInterval(() => socket.destroyed || socket.write(' '), 200);
  t.teardown(() => clearInterval(trickle));
  await withTimeout(ended, GRACE_MS, 'the answer and the end of the gateway side');
  t.match(client.received, /^HTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i, 'answered with connection: close');
  t.equal(socket.destroyed, false, 'the connection lingers, the body still read');

  // Well within the lingering deadline: only cutting the linger short lets close() finish in time.
  await withTimeout(server.close(), LINGER_CLOSE_MS / 2, 'the shutdown');
  await withTimeout(client.closed, LINGER_CLOSE_MS / 2, 'the connection to end');
  t.pass('the shutdown ended the lingering connection');
});

const BOUNDARY = 'drain-shutdown-boundary';
/** A form's start: its model field, unknown, then the file's part header, its bytes to follow. */
const FORM_HEAD = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nnope\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`;

/**
 * A raw client's form upload in flight when the shutdown begins: its `100 Continue` (sent once
 * the gateway reads the body) shows the request is being served, its answer not yet started.
 * The gateway refuses it when the model field arrives, mid-upload.
 */
async function formInFlightAtShutdown(t: Test, fileBytes: number) {
  const { server, client } = await gatewayAndClient(t);
  const { socket, closed } = client;
  const { keyValue } = await createKey(server.store, { protocols: ['x-suite'] });
  const length = FORM_HEAD.length + fileBytes + `\r\n--${BOUNDARY}--\r\n`.length;
  socket.write(`POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: multipart/form-data; boundary=${BOUNDARY}\r\ncontent-length: ${length}\r\nexpect: 100-continue\r\n\r\n`);
  await eventually(() => (/^HTTP\/1\.1 100 [^]*\r\n\r\n/.test(client.received) ? true : undefined), 'the 100 Continue');
  const closing = server.close();
  socket.write(FORM_HEAD);
  /** The final answer (after the 100), once its head has arrived. */
  const answer = () => client.received.slice(client.received.indexOf('\r\n\r\n') + 4);
  return { socket, answer, error: () => client.error, closed, closing };
}

t.test('a refusal answered mid-upload after the shutdown began reaches a client still writing a body it would drain, with no reset', TEST_TIMEOUT, async (t) => {
  // Within what an answer on a kept connection drains: only the shutdown ends this connection.
  const fileBytes = 16 * 1024 * 1024;
  t.ok(fileBytes < LINGER_BYTES);
  const { socket, answer, error, closed, closing } = await formInFlightAtShutdown(t, fileBytes);
  await writeBody(socket, fileBytes, Buffer.alloc(1024 * 1024, 0x41));
  socket.end(`\r\n--${BOUNDARY}--\r\n`);
  await withTimeout(closed, GRACE_MS, 'the connection to end');
  t.equal(error(), undefined, 'no reset while writing the body');
  const final = answer();
  t.match(final, /^HTTP\/1\.1 404 [^]*\r\nconnection: close\r\n/i, 'the refusal, saying the connection ends');
  const json = final.slice(final.indexOf('\r\n\r\n') + 4);
  t.equal(Buffer.byteLength(json, 'latin1'), Number(/\r\ncontent-length: (\d+)\r\n/i.exec(final)?.[1]), 'the whole answer body');
  t.match(JSON.parse(json), { error: { code: 'model_not_visible' } });
  await withTimeout(closing, LINGER_CLOSE_MS / 2, 'the shutdown');
});

t.test('a connection answered mid-upload after the shutdown began lingers briefly, not for the usual lingering deadline', TEST_TIMEOUT, async (t) => {
  t.ok(SHUTDOWN_LINGER_MS < LINGER_CLOSE_MS / 2);
  const { socket, answer, closed, closing } = await formInFlightAtShutdown(t, 1024 * 1024);
  // The file keeps trickling in: only the linger's deadline ends the connection.
  const trickle = setInterval(() => socket.destroyed || socket.write('A'), 100);
  t.teardown(() => clearInterval(trickle));
  await withTimeout(closing, LINGER_CLOSE_MS / 2, 'the shutdown');
  await withTimeout(closed, LINGER_CLOSE_MS / 2, 'the connection to end');
  t.match(answer(), /^HTTP\/1\.1 404 [^]*\r\nconnection: close\r\n/i, 'the client had its answer');
});

t.test('a shutdown beginning while a client still writes the body of a request answered mid-upload does not reset it', TEST_TIMEOUT, async (t) => {
  const { server, client } = await gatewayAndClient(t);
  const { socket, closed } = client;
  const body = 16 * 1024 * 1024;
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${body}\r\n\r\n`);
  await eventually(() => (/\r\n\r\n/.test(client.received) ? true : undefined), 'the answer given mid-upload');
  t.notMatch(client.received, /\r\nconnection: close\r\n/i, 'on a connection kept to drain the body');
  // The shutdown begins with the body still to come, as a client writes it after its answer.
  const closing = server.close();
  await writeBody(socket, body, Buffer.alloc(1024 * 1024, 0x20));
  socket.end();
  await withTimeout(closed, GRACE_MS, 'the connection to end');
  t.equal(client.error, undefined, 'no reset while writing the body');
  await withTimeout(closing, LINGER_CLOSE_MS / 2, 'the shutdown');
  t.equal(client.received.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'the client had its one answer');
});
