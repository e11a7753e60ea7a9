import t from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'undici';
import { UpstreamClient } from '../../src/upstream/index.ts';
import { deferred, type Deferred } from './helpers/dataplane-scenarios.ts';

// A burst that begins as one of the pool's connections closes finds its Clients still
// connecting then: the pool is not retired under it, so its connections serve the next burst.

const KEEP_ALIVE_MS = 1_000;
/** Only bounds a hung test. */
const BOUND_MS = 20_000;
const BURST = 100;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function drain(response: Promise<{ status: number; body: AsyncIterable<unknown> }>): Promise<number> {
  const { status, body } = await response;
  for await (const _ of body);
  return status;
}

t.test('a burst beginning as a connection closes keeps the pool, whose connections serve the next burst', async (t) => {
  let requests = 0;
  let opened = 0;
  /** Each burst's answers wait until the whole burst is in: one connection per request. */
  let burstIn: Deferred = deferred();
  let arrived = 0;
  const server = createServer((req, res: ServerResponse) => {
    req.resume();
    if (requests++ === 0) {
      res.writeHead(200, { connection: 'close' });
      res.end('first');
      return;
    }
    const gate = burstIn;
    if (++arrived === BURST) gate.resolve();
    void gate.promise.then(() => res.end('ok'));
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', () => void opened++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new UpstreamClient({ keepAliveTimeoutMs: KEEP_ALIVE_MS });
  t.teardown(async () => {
    burstIn.resolve();
    await client.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(() => resolve(undefined)));
  });
  const pool = client.dispatcherFor(origin) as Pool;
  const pendingAtDisconnect: number[] = [];
  pool.on('disconnect', () => void pendingAtDisconnect.push(pool.stats.pending));
  const call = (): Promise<number> => drain(client.request({ url: `${origin}/x`, method: 'GET', headers: {} }));

  // The burst starts as the first answer's headers come, before its `Connection: close` ends the connection.
  const first = client.request({ url: `${origin}/x`, method: 'GET', headers: {} });
  const burst = await first.then((response) => [drain(Promise.resolve(response)), ...Array.from({ length: BURST }, call)]);
  t.same([...new Set(await Promise.all(burst))], [200]);
  t.ok(pendingAtDisconnect[0]! > 0, `the first connection closed while ${pendingAtDisconnect[0]} requests waited for connections`);
  t.equal(client.diagnosticSizes().closing, 0);
  // A retired pool's connections close as they go idle: there would be no second burst to see.
  if (!t.equal(client.dispatcherFor(origin), pool, 'the pool was not retired under the burst')) return;

  await until(() => pool.stats.free === BURST, "the burst's connections to be free for the next");
  const openedBefore = opened;
  burstIn = deferred();
  arrived = 0;
  t.same([...new Set(await Promise.all(Array.from({ length: BURST }, call)))], [200]);
  // The Client that lost its connection to `Connection: close` may be handed a request and reconnect.
  const reopened = opened - openedBefore;
  t.ok(reopened <= 2, `the second burst of ${BURST} reused the first's connections (new ones: ${reopened})`);
  t.equal(client.dispatcherFor(origin), pool, 'the same pool served it');

  await until(() => client.dispatcherFor(origin) !== pool, 'the pool to be let go once its connections go idle and close');
  await until(() => client.diagnosticSizes().closing === 0, 'the pool to finish closing');
});
