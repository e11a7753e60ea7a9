import { connect, type Socket } from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, eventually, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { LINGER_BYTES, LINGER_CLOSE_MS, LINGER_MS } from '../../src/http/drain-after-answer.ts';

// Issue 4 item 5: every refusal answers in the client's protocol's error shape, so the official
// SDKs raise their typed errors. One given while the body still uploads must reach a client
// that is still writing: the gateway reads and discards the rest of the body (within bounds)
// instead of closing the connection on unread bytes, which resets it under the client.

const MiB = 1024 * 1024;
/** Generous bound on waiting: the test fails rather than hangs. */
const BOUND_MS = 30_000;

// One test waits for the lingering deadline.
t.setTimeout(240_000);

async function gateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"x","object":"chat.completion","choices":[]}');
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const suite = await createKey(gw.store, { protocols: ['x-suite', 'x-completions'] });
  return { upstream, gw, keyValue, suiteKey: suite.keyValue };
}

/**
 * The official openai SDK, in a process of its own as a real client is (in this one the
 * gateway and the client would take turns on one event loop, which hides the race): `calls`
 * calls of `call` against the gateway, each one's error class and request id.
 */
async function sdkCalls(gw: Gateway, apiKey: string, call: string, calls: number): Promise<{ error: string; requestId: string | null }[]> {
  const script = `
    import OpenAI, { toFile } from 'openai';
    const client = new OpenAI({ apiKey: process.env.KEY, baseURL: process.env.BASE, maxRetries: 0 });
    const MiB = 1024 * 1024;
    const out = [];
    for (let i = 0; i < ${calls}; i++) {
      const error = await (${call}).then(() => null, (e) => e);
      out.push({ error: error?.constructor?.name ?? 'none', requestId: error?.headers?.get?.('x-request-id') ?? null });
    }
    console.log(JSON.stringify(out));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd(), env: { ...process.env, KEY: apiKey, BASE: `${gw.url}/v1` }, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  await withTimeout(once(child, 'exit'), BOUND_MS * calls, 'the SDK calls');
  return JSON.parse(stdout) as { error: string; requestId: string | null }[];
}

t.test('openai SDK: a 30 MiB transcription upload naming an unknown model (model field first) gets NotFoundError', async (t) => {
  const { gw, suiteKey, upstream } = await gateway(t);
  const results = await sdkCalls(gw, suiteKey, "client.audio.transcriptions.create({ model: 'nope', file: await toFile(Buffer.alloc(30 * MiB, 0x41), 'a.wav') })", 3);
  t.equal(results.length, 3);
  for (const [i, { error, requestId }] of results.entries()) {
    t.equal(error, 'NotFoundError', `call ${i + 1}: the typed 404, not a connection error`);
    if (requestId === null) continue;
    const record = await waitForLog(gw, requestId);
    t.match(record, { status: 404, error_code: 'model_not_visible' }, `call ${i + 1}: recorded as the refusal`);
  }
  t.equal(upstream.requests.length, 0, 'nothing was forwarded');
});

t.test('openai SDK: a 30 MiB chat request naming an unknown model gets NotFoundError', async (t) => {
  const { gw, keyValue } = await gateway(t);
  const results = await sdkCalls(gw, keyValue, "client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'y'.repeat(30 * MiB) }] })", 3);
  t.same(results.map((r) => r.error), ['NotFoundError', 'NotFoundError', 'NotFoundError'], 'the typed 404 each time, not a connection error');
});

/** A raw connection that reads while it writes: what arrived, and whether it closed. */
function rawConnection(t: Test, gw: Gateway) {
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
  let received = '';
  let writeError: Error | undefined;
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', (e) => (writeError = e));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  t.teardown(() => void socket.destroy());
  return { socket, received: () => received, writeError: () => writeError, closed };
}

/** Writes `total` bytes in 1 MiB pieces, waiting on backpressure; stops early if the socket goes. */
async function upload(socket: Socket, total: number): Promise<number> {
  const piece = Buffer.alloc(MiB, 0x20);
  let sent = 0;
  while (sent < total && !socket.destroyed) {
    const n = Math.min(MiB, total - sent);
    const more = socket.write(n === MiB ? piece : piece.subarray(0, n));
    sent += n;
    if (!more) await new Promise<void>((resolve) => {
      const done = () => { socket.off('drain', done).off('close', done); resolve(); };
      socket.once('drain', done).once('close', done);
    });
  }
  return sent;
}

function answers(text: string): string[] {
  return text.match(/HTTP\/1\.1 \d{3} /g) ?? [];
}

t.test('a raw client uploading 20 MiB after an early 401 reads the whole answer, and the connection serves the next request', async (t) => {
  const { gw, keyValue } = await gateway(t);
  const conn = rawConnection(t, gw);
  const body = 20 * MiB;
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${body}\r\n\r\n`);
  t.equal(await withTimeout(upload(conn.socket, body), BOUND_MS, 'the upload'), body, 'the whole body was written');
  t.equal(conn.writeError(), undefined, 'no reset while writing');
  const first = conn.received();
  t.match(first, /^HTTP\/1\.1 401 /, 'the 401 arrived');
  const json = first.slice(first.indexOf('\r\n\r\n') + 4);
  const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(first)?.[1]);
  t.equal(Buffer.byteLength(json, 'latin1'), length, 'the whole answer body');
  t.match(JSON.parse(json), { error: { code: 'access_key_invalid' } }, "in the client's protocol's error shape");
  const record = await waitForLog(gw, /\r\nx-request-id: ([^\r]+)\r\n/i.exec(first)?.[1]);
  t.match(record, { status: 401, error_code: 'access_key_invalid' }, 'recorded as before');
  // The body ended within the bound: node's parser is at the next request, which is served.
  const next = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: application/json\r\ncontent-length: ${next.length}\r\nconnection: close\r\n\r\n${next}`);
  await withTimeout(conn.closed, BOUND_MS, 'the second answer');
  t.same(answers(conn.received()), ['HTTP/1.1 401 ', 'HTTP/1.1 200 '], 'the next request on the connection is answered after it');
});

t.test('a body that goes on past the lingering bound has its connection closed after the answer', async (t) => {
  const { gw } = await gateway(t);
  const conn = rawConnection(t, gw);
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`);
  // One chunk larger than the bound, sent in pieces.
  const size = LINGER_BYTES + 8 * MiB;
  conn.socket.write(`${size.toString(16)}\r\n`);
  await withTimeout(upload(conn.socket, size), BOUND_MS, 'the upload');
  // The body ends, and a request follows: read past the bound, it would be answered too.
  if (!conn.socket.destroyed) conn.socket.write(`\r\n0\r\n\r\nGET /v1/models HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\n\r\n`);
  await withTimeout(conn.closed, BOUND_MS, 'the connection to close');
  t.match(conn.received(), /^HTTP\/1\.1 401 /, 'the answer was read while writing');
  t.match(conn.received(), /"access_key_invalid"/);
  t.equal(answers(conn.received()).length, 1, 'the gateway stopped reading at the bound and closed the connection');
});

t.test('a body that stops coming after an early answer has its connection closed, not held', async (t) => {
  const { gw } = await gateway(t);
  const conn = rawConnection(t, gw);
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${MiB}\r\n\r\n{"model":`);
  await withTimeout(conn.closed, BOUND_MS, 'the connection to close');
  t.match(conn.received(), /^HTTP\/1\.1 401 /, 'the answer came first');
});

t.test('a body that trickles on after an early answer has its connection closed at the lingering deadline, not held', async (t) => {
  const { gw } = await gateway(t);
  const conn = rawConnection(t, gw);
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${MiB}\r\n\r\n{"model":`);
  // One byte every 3 s, far from the declared length: each one restarts node's keep-alive
  // timeout (5 s), which alone would never end the connection.
  const trickle = setInterval(() => conn.socket.destroyed || conn.socket.write(' '), 3000);
  t.teardown(() => clearInterval(trickle));
  await withTimeout(conn.closed, LINGER_MS + 15_000, 'the gateway to close the trickling connection');
  t.match(conn.received(), /^HTTP\/1\.1 401 /, 'the answer came first');
  t.match(conn.received(), /"access_key_invalid"/);
  t.equal(answers(conn.received()).length, 1, 'one answer, then the connection ended');
});

t.test('a body declared far beyond the lingering bound is answered with connection: close, the rest of the upload discarded without a reset', async (t) => {
  const { gw } = await gateway(t);
  const conn = rawConnection(t, gw);
  const declared = 1024 * MiB;
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`);
  await withTimeout(upload(conn.socket, declared), BOUND_MS + LINGER_CLOSE_MS, 'the upload to stop');
  await withTimeout(conn.closed, BOUND_MS + LINGER_CLOSE_MS, 'the connection to close');
  const answer = conn.received();
  t.match(answer, /^HTTP\/1\.1 401 /, 'the answer was read');
  t.match(answer, /\r\nconnection: close\r\n/i, 'saying the connection ends');
  const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  t.equal(Buffer.byteLength(json, 'latin1'), Number(/\r\ncontent-length: (\d+)\r\n/i.exec(answer)?.[1]), 'the whole answer body');
  t.match(JSON.parse(json), { error: { code: 'access_key_invalid' } });
});

t.test('a client that writes its whole upload before it reads gets the answer given with connection: close, not a reset', async (t) => {
  const { gw } = await gateway(t);
  const conn = rawConnection(t, gw);
  // Not read until the upload is written, as a client that sends the body before it looks at
  // the answer: a connection closed on unread bytes resets it first, and the answer is lost.
  conn.socket.pause();
  const declared = 1024 * MiB;
  conn.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer not-a-key\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`);
  const sent = 32 * MiB;
  await withTimeout(upload(conn.socket, sent), BOUND_MS, 'the upload');
  t.equal(conn.writeError(), undefined, 'no reset while writing');
  conn.socket.resume();
  await eventually(() => (/\r\n\r\n[^]*\}$/.test(conn.received()) ? true : undefined), 'the whole answer', BOUND_MS);
  const answer = conn.received();
  t.match(answer, /^HTTP\/1\.1 401 /, 'the answer was read after the upload');
  t.match(answer, /\r\nconnection: close\r\n/i, 'saying the connection ends');
  const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  t.match(JSON.parse(json), { error: { code: 'access_key_invalid' } });
  conn.socket.end();
  await withTimeout(conn.closed, BOUND_MS, 'the connection to close');
});

t.test('openai SDK: a 65 MiB chat request, over maxBodyBytes and beyond the lingering bound, gets the typed 413 each time, not a connection error', async (t) => {
  const { gw, keyValue } = await gateway(t);
  const results = await sdkCalls(gw, keyValue, "client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'y'.repeat(65 * MiB) }] })", 10);
  t.same(results.map((r) => r.error), Array(10).fill('APIError'), 'APIError (status 413) each time, not APIConnectionError');
});
