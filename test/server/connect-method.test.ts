import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute } from '../dataplane/helpers/data-plane-harness.ts';
import { eventually } from '../dataplane/helpers/dataplane-scenarios.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// A client set to use the gateway as its HTTPS proxy sends CONNECT. The gateway opens no
// tunnels: it answers the CONNECT as any request it has no endpoint for, in the client's error
// shape and with a record, and ends the connection, rather than closing it unanswered.

const AUTH_KEY = 'connect-method-auth-key-0123456789abcdef';

t.test('a CONNECT is answered as a refused request and recorded, and its connection ends', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-connect-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue, key } = await seedRoute(server.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'm', upstream: 'v' }], protocols: ['x-completions'] });

  const tunnel = rawConnection(t, server.port);
  tunnel.write(`CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
  const refused = await tunnel.next();
  t.equal(refused.status, 404);
  t.equal(refused.headers['connection'], 'close');
  t.equal(JSON.parse(refused.body).error.code, 'route_not_found', 'in the completions error shape');
  await tunnel.closed;

  const onPath = rawConnection(t, server.port);
  onPath.write(`CONNECT /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nx-api-key: ${keyValue}\r\nanthropic-version: 2023-06-01\r\n\r\n`);
  const notAllowed = await onPath.next();
  t.equal(notAllowed.status, 405, 'a path that takes other methods');
  t.equal(notAllowed.headers['allow'], 'POST');
  await onPath.closed;

  // Pipelined behind a request whose answer is still to be written: it waits its turn.
  const pipelined = rawConnection(t, server.port);
  pipelined.write(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyValue}\r\n\r\nCONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\nAuthorization: Bearer ${keyValue}\r\n\r\n`);
  const listed = await pipelined.next();
  t.equal(listed.status, 200, 'the request ahead is answered first');
  t.match(JSON.parse(listed.body), { object: 'list', data: [{ id: 'm' }] });
  const refusedAfter = await pipelined.next();
  t.equal(refusedAfter.status, 404, 'then the CONNECT');
  t.equal(JSON.parse(refusedAfter.body).error.code, 'route_not_found');
  await pipelined.closed;

  const records = await eventually(async () => {
    await server.logs.flush();
    const items = (await server.logs.list({ access_key_id: key.id }, { limit: 10 })).items;
    return items.length === 4 ? items : undefined;
  }, 'the records of the three CONNECTs and the model list');
  t.same(records.map((r) => `${r.status} ${r.error_code}`).sort(), ['200 null', '404 route_not_found', '404 route_not_found', '405 method_not_allowed']);
});
