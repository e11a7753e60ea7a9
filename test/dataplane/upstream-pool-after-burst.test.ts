import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Dispatcher } from 'undici';
import { UpstreamClient } from '../../src/upstream/index.ts';
import { deferred } from './helpers/dataplane-scenarios.ts';

// After a burst, the direct pool neither keeps its idle connections past the configured
// keep-alive (whatever the upstream's Keep-Alive hint says) nor its Client objects for good.

const KEEP_ALIVE_MS = 1_000;
/** Only bounds a hung test: far below the upstream's 60 s hint, far above our 1 s. */
const BOUND_MS = 20_000;

interface Upstream {
  origin: string;
  open(): number;
  close(): Promise<void>;
}

/** An upstream that asks clients to keep idle connections 60 s (`Keep-Alive: timeout=60`). */
async function startUpstream(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Upstream> {
  let open = 0;
  const server = createServer((req, res) => {
    req.resume();
    handle(req, res);
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    open++;
    socket.on('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: () => open,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function call(client: UpstreamClient, origin: string): Promise<{ status: number; keepAlive: unknown; body: string }> {
  const response = await client.request({ url: `${origin}/x`, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  let body = '';
  for await (const chunk of response.body) body += String(chunk);
  return { status: response.status, keepAlive: response.headers['keep-alive'], body };
}

/**
 * The Client objects an undici Pool holds. undici exposes no count of them (PoolStats counts
 * connections and requests), so this reads its private `Symbol(clients)` array.
 */
function poolClients(pool: Dispatcher): number {
  const symbol = Object.getOwnPropertySymbols(pool).find((s) => String(s) === 'Symbol(clients)');
  if (symbol === undefined) throw new Error("undici's Pool no longer has Symbol(clients): update this test");
  return ((pool as unknown as Record<symbol, unknown[]>)[symbol] ?? []).length;
}

t.test('after a burst, idle connections close at our keep-alive despite the upstream hint, and the pool lets its Clients go', async (t) => {
  const BURST = 200;
  const allArrived = deferred();
  const held: ServerResponse[] = [];
  const upstream = await startUpstream((_req, res) => {
    held.push(res);
    if (held.length === BURST) allArrived.resolve();
    // Each answer waits until the whole burst is in: one connection per request.
    void allArrived.promise.then(() => res.end('{}'));
  });
  const client = new UpstreamClient({ keepAliveTimeoutMs: KEEP_ALIVE_MS });
  t.teardown(async () => {
    allArrived.resolve();
    await client.destroy();
    await upstream.close();
  });
  const burstPool = client.dispatcherFor(upstream.origin);

  const answers = await Promise.all(Array.from({ length: BURST }, () => call(client, upstream.origin)));
  t.same([...new Set(answers.map((a) => a.status))], [200]);
  t.equal(answers[0]!.keepAlive, 'timeout=60', 'the upstream hinted 60 s');
  t.equal(held.length, BURST, 'the whole burst was at the upstream at once, one connection per request');

  await until(() => upstream.open() === 0, `the upstream's ${BURST} connections to close`);
  t.pass('every connection closed (the hint would have kept them 58 s)');
  await until(() => client.diagnosticSizes().closing === 0, 'the burst pool to finish closing');
  t.not(client.dispatcherFor(upstream.origin), burstPool, 'the burst pool was let go');

  const AFTER = 3;
  for (let i = 0; i < AFTER; i++) t.equal((await call(client, upstream.origin)).status, 200);
  // undici may open a second Client when the next request comes before the last one's drain.
  const clients = poolClients(client.dispatcherFor(upstream.origin));
  t.ok(clients <= AFTER, `the pool now holds ${clients} Client objects, not the burst's ${BURST}`);
});

t.test('a pool let go after a burst finishes the requests still in flight on it', async (t) => {
  const QUICK = 100;
  const SLOW = 10;
  const release = deferred();
  let slowArrived = 0;
  const slowIn = deferred();
  const upstream = await startUpstream((req, res) => {
    if (req.url !== '/slow') {
      res.end('{}');
      return;
    }
    if (++slowArrived === SLOW) slowIn.resolve();
    void release.promise.then(() => {
      res.write('{"part":');
      setImmediate(() => res.end('1}'));
    });
  });
  const client = new UpstreamClient({ keepAliveTimeoutMs: KEEP_ALIVE_MS });
  t.teardown(async () => {
    release.resolve();
    await client.destroy();
    await upstream.close();
  });
  const burstPool = client.dispatcherFor(upstream.origin);

  const slow = Array.from({ length: SLOW }, async () => {
    const response = await client.request({ url: `${upstream.origin}/slow`, method: 'GET', headers: {} });
    let body = '';
    for await (const chunk of response.body) body += String(chunk);
    return { status: response.status, body };
  });
  await slowIn.promise;
  // The quick ones need connections of their own, and go idle while the slow ones wait.
  await Promise.all(Array.from({ length: QUICK }, () => call(client, upstream.origin)));
  await until(() => client.dispatcherFor(upstream.origin) !== burstPool, 'the burst pool to be let go');
  t.equal(client.diagnosticSizes().closing, 1, 'it is still closing: its slow requests run');

  release.resolve();
  t.same(await Promise.all(slow), Array.from({ length: SLOW }, () => ({ status: 200, body: '{"part":1}' })));
  await until(() => client.diagnosticSizes().closing === 0, 'the burst pool to finish closing');
});
