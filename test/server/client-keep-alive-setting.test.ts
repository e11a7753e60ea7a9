import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { AUTH_KEY, startGateway, tempDataDir } from '../management/support/gateway.ts';
import { rawConnection } from './helpers/raw-http-connection.ts';

// Behind a proxy that keeps idle upstream connections longer than the gateway does, the proxy
// may reuse one just as the gateway closes it: the client gets the proxy's 502, and no record.

const SETTINGS = `GET /api/settings HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${AUTH_KEY}\r\n\r\n`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('client_keep_alive_timeout_seconds is a known setting: an integer from 1 to 3600, default 5', async (t) => {
  const gw = await startGateway(t);
  t.equal((await gw.api('GET', '/api/settings')).json.data.client_keep_alive_timeout_seconds, 5);
  const refusals: Array<[unknown, string]> = [
    [0, 'invalid_value'],
    [3601, 'invalid_value'],
    ['5', 'wrong_type'],
    [1.5, 'wrong_type'],
  ];
  for (const [bad, reason] of refusals) {
    const res = await gw.api('PUT', '/api/settings', { body: { client_keep_alive_timeout_seconds: bad } });
    t.equal(res.status, 400, `${JSON.stringify(bad)} is refused`);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'client_keep_alive_timeout_seconds', reason } });
  }
  t.equal((await gw.api('GET', '/api/settings')).json.data.client_keep_alive_timeout_seconds, 5, 'nothing refused was saved');
  t.equal((await gw.api('PUT', '/api/settings', { body: { client_keep_alive_timeout_seconds: 3600 } })).status, 200);
  await gw.restart();
  t.equal((await gw.api('GET', '/api/settings')).json.data.client_keep_alive_timeout_seconds, 3600, 'durable');
  const conn = rawConnection(t, gw.server.port);
  conn.write(SETTINGS);
  t.equal((await conn.next()).headers['keep-alive'], 'timeout=3600', 'the stored value holds from the start');
});

t.test('a change holds from the next answer: an idle connection outlives node default 5 s', async (t) => {
  const gw = await startGateway(t);
  const conn = rawConnection(t, gw.server.port);
  conn.write(SETTINGS);
  t.equal((await conn.next()).headers['keep-alive'], 'timeout=5', "node's default before any change");
  t.equal((await gw.api('PUT', '/api/settings', { body: { client_keep_alive_timeout_seconds: 10 } })).status, 200);
  conn.write(SETTINGS);
  t.equal((await conn.next()).headers['keep-alive'], 'timeout=10', 'the next answer on a connection already open tells the new value');
  let closedEarly = false;
  void conn.closed.then(() => (closedEarly = true));
  // Past node's default (5 s and its 1 s grace), well inside the new 10 s.
  await sleep(7000);
  t.notOk(closedEarly, 'the idle connection is still open after 7 s');
  conn.write(SETTINGS);
  t.equal((await conn.next()).status, 200, 'and it serves the next request');
});

t.test('a stored client_keep_alive_timeout_seconds the schema refuses stops the start, naming the setting', async (t) => {
  const dataDir = tempDataDir(t);
  writeFileSync(
    path.join(dataDir, 'config.json'),
    JSON.stringify({ version: 1, next_id: { group: 1, credential: 1, access_key: 1, credential_stage: 1 }, groups: [], credentials: [], access_keys: [], settings: { client_keep_alive_timeout_seconds: 0 }, model_prices: [], credential_stages: [] }),
  );
  const err = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
  // A server that started after all is closed, not left to hold the test open.
  if (!(err instanceof Error)) t.teardown(() => (err as { close(): Promise<void> }).close());
  t.ok(err instanceof StoreFileError, 'a StoreFileError');
  t.match((err as Error).message, /settings\.client_keep_alive_timeout_seconds is 0, which must be >= 1/);
});
