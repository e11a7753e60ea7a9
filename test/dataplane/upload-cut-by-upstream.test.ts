import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { classifyUpstreamError } from '../../src/upstream/index.ts';
import { noteRequestWritten } from '../../src/upstream/request-written.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';

// An upstream that refuses an upload early (413 and Connection: close before reading a large
// body) resets the connection while the gateway still writes the body, and Linux discards the
// unread answer on the reset: the gateway sees only the connection lost. That is no fault of
// the credential (another client's smaller file may pass), so no cooldown: the client gets 502
// upstream_unreachable saying the upstream closed the connection before the whole body was sent,
// and x-should-retry: false, as the same body would be refused again.

const BOUNDARY = 'XyZcut';
/** Far more than the socket buffers on both sides hold: the upload is still going when the upstream resets. */
const FILE = Buffer.alloc(20 * 1024 * 1024, 0x37);

function form(model: string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`),
    FILE,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

/**
 * A raw upstream that, once a request's head is in, resets the connection without reading the
 * body: what the gateway sees of an early 413 whose bytes the reset discarded (writing the 413
 * first would leave undici a race to read it, and the test a coin toss).
 */
async function refusingUpstream(t: Test) {
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let head = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      if (head.includes('\r\n\r\n')) return;
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      heads.push(head.slice(0, head.indexOf('\r\n\r\n')));
      socket.resetAndDestroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, heads };
}

t.test('an upstream that resets an upload it refuses: 502 saying so, and no credential cools down', async (t) => {
  const upstream = await refusingUpstream(t);
  const gw = await gateway(t);
  const { group } = await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'whisper-1' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: form('stt') });
  t.equal(res.status, 502);
  t.equal(res.headers.get('x-should-retry'), 'false', 'the SDKs do not send the same body again');
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.equal(body.error.code, 'upstream_unreachable');
  t.match(body.error.message, /closed the connection before the whole request body was sent/);
  t.equal(upstream.heads.length, 1, 'a form that is not replay safe is not sent again');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'upstream_unreachable', attempts: [{ status: null, error_code: 'upstream_closed_while_sending' }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

t.test('a JSON body the upstream closed on at each of two credentials: the last answer keeps x-should-retry: false', async (t) => {
  const upstream = await refusingUpstream(t);
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const body = JSON.stringify({ model: 'team-chat', messages: [{ role: 'user', content: 'x'.repeat(FILE.length) }] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  await res.arrayBuffer();
  t.equal(res.status, 502);
  t.equal(upstream.heads.length, 2, 'replay safe: the next credential was tried');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { attempts: [{ error_code: 'upstream_closed_while_sending' }, { error_code: 'upstream_closed_while_sending' }] });
  // Both credentials are still usable (no cooldown): the pool's hint alone would leave the retry to the SDK.
  t.equal(res.headers.get('x-should-retry'), 'false', 'the SDKs do not send the same body again');
});

t.test('a connection lost while the body was still being written is told apart from one lost after it', (t) => {
  const lost = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
  const partly = lost();
  noteRequestWritten(partly, true, false);
  t.same(classifyUpstreamError(partly), { kind: 'connection_lost', notDelivered: false, whileSending: true, code: 'upstream_closed_while_sending' });
  const whole = lost();
  noteRequestWritten(whole, true);
  t.same(classifyUpstreamError(whole), { kind: 'connection_lost', notDelivered: false, code: 'upstream_connection_lost' });
  t.end();
});
