import { createServer, type AddressInfo, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';

// An upstream that closes the connection while the request body is still going out most often
// refused the body (too large): the same body would be refused again, so the gateway's 502
// tells the SDKs not to send it again (x-should-retry: false), whatever the pool's hint is.

/** Far more than the socket buffers on both sides hold: the body is still going when the upstream resets. */
const LARGE = 20 * 1024 * 1024;

/** A raw upstream that resets each connection once a request's head is in, without reading the body. */
async function resettingUpstream(t: Test) {
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

t.test('an upload the upstream closed on: 502 with x-should-retry: false', async (t) => {
  const upstream = await resettingUpstream(t);
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'whisper-1' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  const boundary = 'XyZcut';
  const form = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nstt\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`),
    Buffer.alloc(LARGE, 0x37),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
  await res.arrayBuffer();
  t.equal(res.status, 502);
  t.equal(res.headers.get('x-should-retry'), 'false', 'the SDKs do not send the same body again');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { attempts: [{ error_code: 'upstream_closed_while_sending' }] });
});

t.test('a JSON body the upstream closed on at each of two credentials: the last answer keeps x-should-retry: false', async (t) => {
  const upstream = await resettingUpstream(t);
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const body = JSON.stringify({ model: 'team-chat', messages: [{ role: 'user', content: 'x'.repeat(LARGE) }] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  await res.arrayBuffer();
  t.equal(res.status, 502);
  t.equal(upstream.heads.length, 2, 'replay safe: the next credential was tried');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { attempts: [{ error_code: 'upstream_closed_while_sending' }, { error_code: 'upstream_closed_while_sending' }] });
  // Both credentials are still usable (no cooldown): the pool's hint alone would leave the retry to the SDK.
  t.equal(res.headers.get('x-should-retry'), 'false', 'the SDKs do not send the same body again');
});
