import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer, type DataPlaneMount } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute, startDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// node's parser takes request targets that start with `*` and that no URL can be (`*:abc`):
// a WebSocket upgrade to one is a path that opens no session, answered as the plain request it
// also is, and the server goes on serving.

const AUTH_KEY = 'upgrade-odd-target-auth-key-0123456789';
const WEBSOCKET = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';
const ODD_TARGETS = ['*:abc', '*:99999', '*%', '*%zz', '*[', '*^', '*|', '*<', '*x:1a'];

async function startServer(t: Test, mountDataPlane: DataPlaneMount) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-upgrade-odd-'));
  const logged: string[] = [];
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane, log: (line) => void logged.push(line) });
  // From here on: the start's own lines (the auth key's source) are no failure.
  logged.length = 0;
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions'] });
  return { server, keyValue, logged };
}

t.test('a WebSocket upgrade to a target no URL can be is answered 404 as without Upgrade, and the connection serves the next request', async (t) => {
  const { server, keyValue, logged } = await startServer(t, dataPlaneMount());
  for (const target of ODD_TARGETS) {
    const c = rawConnection(t, server.port);
    c.write(`GET ${target} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
    const plain = await c.next();
    c.write(`GET ${target} HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}Authorization: Bearer ${keyValue}\r\n\r\n`);
    const upgrade = await c.next();
    t.equal(upgrade.status, 404, `${target}: 404`);
    t.match(JSON.parse(upgrade.body), { error: { code: 'route_not_found' } }, `${target}: route_not_found`);
    t.same([upgrade.status, JSON.parse(upgrade.body).error.code], [plain.status, JSON.parse(plain.body).error.code], `${target}: as the plain request is answered`);
    c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
    t.equal((await c.next()).status, 200, `${target}: the next request on the connection is served`);
  }
  const after = rawConnection(t, server.port);
  after.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
  t.equal((await after.next()).status, 200, 'and a new connection after them all');
  t.same(logged, [], 'no failure on the way: the choice itself took those targets');
});

t.test('the upgrade handler itself answers such a target 404 route_not_found', async (t) => {
  // The harness hands every upgrade to the handler, as a caller that serves every upgrade there would.
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  for (const target of ODD_TARGETS) {
    const c = rawConnection(t, Number(new URL(gw.url).port));
    c.write(`GET ${target} HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}\r\n`);
    const answer = await c.next();
    t.equal(answer.status, 404, `${target}: 404`);
    t.match(JSON.parse(answer.body), { error: { code: 'route_not_found' } }, `${target}: route_not_found`);
  }
});

t.test('an upgrade whose choice fails is served as the plain request it also is, not a crash', async (t) => {
  const served = dataPlaneMount();
  const failing: DataPlaneMount = async (app, deps) => {
    const mounted = (await served(app, deps)) ?? {};
    return {
      ...mounted,
      servesUpgrade: () => {
        throw new TypeError('choice failed');
      },
    };
  };
  const { server, keyValue, logged } = await startServer(t, failing);
  const c = rawConnection(t, server.port);
  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}Authorization: Bearer ${keyValue}\r\n\r\n`);
  const answer = await c.next();
  t.equal(answer.status, 200, 'the model list, as a plain request');
  t.same(JSON.parse(answer.body).data.map((m: { id: string }) => m.id), ['m-a']);
  c.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
  t.equal((await c.next()).status, 200, 'and the next request');
  t.match(logged, [/choice failed/], 'the failure is logged');
});
