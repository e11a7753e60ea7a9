import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute } from '../dataplane/helpers/data-plane-harness.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// RFC 9112 §3.2.2: a server accepts a request target in absolute form (`GET http://host/path`,
// what a client set to use the gateway as its proxy sends), and routes it as its path and query.

const AUTH_KEY = 'absolute-form-auth-key-0123456789abcdef';

t.test('absolute-form targets are routed by their path and query on both planes', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-absolute-form-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions'] });
  const c = rawConnection(t, server.port);

  c.write(`GET http://127.0.0.1/api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${AUTH_KEY}\r\n\r\n`);
  const health = await c.next();
  t.equal(health.status, 200, 'the management plane');
  t.ok(JSON.parse(health.body).data, 'its health answer');

  c.write(`GET HTTP://Gateway.example:8080/v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
  const models = await c.next();
  t.equal(models.status, 200, 'the data plane, scheme in any case');
  t.same(JSON.parse(models.body).data.map((m: { id: string }) => m.id), ['m-a']);

  c.write(`GET https://127.0.0.1/v1/models/m-a?key=${keyValue} HTTP/1.1\r\nHost: gw\r\n\r\n`);
  const model = await c.next();
  t.equal(model.status, 200, 'https too, its query kept');
  // A `key` query parameter with no authorization header is a generate-style client's: its shape.
  t.equal(JSON.parse(model.body).name, 'models/m-a');
});
