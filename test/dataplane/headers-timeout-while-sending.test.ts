import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { classifyUpstreamError } from '../../src/upstream/index.ts';
import { noteRequestWritten } from '../../src/upstream/request-written.ts';
import { startDataPlane } from './helpers/data-plane-harness.ts';
import { completionJson, createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// undici runs the headers timeout while a request body waits for the socket to drain: an
// upstream that stops reading the body never had the whole request, so it is not working on
// it. That is no answer overdue (answered at once, no cooldown, no other credential), but the
// upstream failing as a lost connection does: a cooldown, and the next credential for an
// operation that may be replayed.

/** Far more than the socket buffers on both sides hold: the upload stalls while the upstream does not read. */
const LARGE = 12 * 1024 * 1024;

/** An upstream whose first credential's requests are never read (nor answered); the others are answered once read. */
async function upstreamIgnoring(t: Test, secret: string) {
  const seen: string[] = [];
  const held = new Set<IncomingMessage>();
  const server = createServer((req, res) => {
    const presented = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    seen.push(presented);
    if (presented === secret) {
      held.add(req);
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(completionJson('vendor-m'));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

t.test('an upstream that stops reading the request body: the headers timeout cools its credential down and the next credential serves the request', async (t) => {
  const upstream = await upstreamIgnoring(t, 'sk-first');
  const gw = await startDataPlane({ headersTimeoutMs: 500 });
  t.teardown(() => gw.close());
  const { group } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-first', 'sk-second'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const body = JSON.stringify({ model: 'team-m', messages: [{ role: 'user', content: 'x'.repeat(LARGE) }] });
  const res = await withTimeout(
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body }),
    20_000,
    'the answer',
  );
  t.equal(res.status, 200, 'served by the second credential');
  t.match(JSON.parse(await res.text()), { model: 'vendor-m' });
  t.same(upstream.seen, ['sk-first', 'sk-second']);
  const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, attempts: [{ status: null, error_code: 'upstream_send_timeout' }, { status: 200 }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['cooldown', 'active'], 'the first credential cooled down');
});

t.test('a headers timeout is overdue only once the whole request was written', async (t) => {
  const timeout = () => Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
  const whole = timeout();
  noteRequestWritten(whole, true);
  t.same(classifyUpstreamError(whole), { kind: 'headers_timeout', notDelivered: false, overdue: true, code: 'upstream_timeout' });
  const partly = timeout();
  noteRequestWritten(partly, true, false);
  t.same(classifyUpstreamError(partly), { kind: 'headers_timeout', notDelivered: false, code: 'upstream_send_timeout' });
  const unwritten = timeout();
  noteRequestWritten(unwritten, false);
  t.same(classifyUpstreamError(unwritten), { kind: 'headers_timeout', notDelivered: true, code: 'upstream_timeout' });
});
