import t, { type Test } from 'tap';
import { request, type IncomingMessage } from 'node:http';
import { MAX_HELD_EVENT_BYTES } from '../../src/dataplane/relay/stream-relay.ts';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, eventually, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// An answer whose upstream ends while the client's socket is full (its tail still in node's
// buffer for the connection) is held to the client_stalled rule as one still coming: the
// record waits for the tail to reach the kernel, or for the stall or the client leaving.

/**
 * One completions event just under what the relay holds whole (some 16 MiB), with its length:
 * the body's end is read with its last bytes, so the whole event is written with the end, far
 * more than the kernel takes (a few MiB) for a client that reads nothing.
 */
const EVENT = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x'.repeat(MAX_HELD_EVENT_BYTES - 64 * 1024) }, finish_reason: 'stop' }] })}\n\n`;

/** A client whose response is paused once its head came: it reads nothing more until resumed. */
async function stalledClient(t: Test, streamIdleTimeoutMs = 300) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': String(Buffer.byteLength(EVENT)) });
      res.end(EVENT);
    },
    { streamIdleTimeoutMs },
  );
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-tail'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'team-m', stream: true, messages: [] }));
  });
  // Reads nothing more than the head came with.
  response.pause();
  response.on('error', () => {});
  response.socket.on('error', () => {});
  t.teardown(() => response.destroy());
  return { gw, response };
}

t.test('a client that stops reading after the upstream ended is client_stalled, and its connection is closed', async (t) => {
  const { gw, response } = await stalledClient(t);
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: 'client_stalled', client_aborted: false }, 'the client never got the tail');
  // The client still holds its end open: only the gateway can have closed the connection.
  t.notOk(response.socket.destroyed, 'the client did not leave');
  await eventually(async () => ((await gw.connections()) === 0 ? true : undefined), 'the gateway to close the connection', 10_000);
  t.pass('the gateway closed the connection');
});

t.test('a client that leaves while the tail waits for it is client_closed', async (t) => {
  const { gw, response } = await stalledClient(t);
  response.destroy();
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: 'client_closed', client_aborted: true });
});

t.test('a client that reads the tail late, within the idle timeout, gets it whole, and the record is a clean success', async (t) => {
  const { gw, response } = await stalledClient(t, 5000);
  // Well within the idle timeout, and long enough for the upstream to have ended meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 800));
  let received = 0;
  response.on('data', (chunk: Buffer) => (received += chunk.length));
  const ended = new Promise((resolve) => response.on('end', resolve));
  response.resume();
  await ended;
  t.equal(received, Buffer.byteLength(EVENT), 'the whole event');
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: null, client_aborted: false });
});
