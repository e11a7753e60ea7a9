import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { AUTH_KEY, startGateway, tempDataDir } from './support/gateway.ts';

t.test('server_error_cooldown_seconds is a known setting: an integer from 0 to 86400, default 5', async (t) => {
  const gw = await startGateway(t);
  t.equal((await gw.api('GET', '/api/settings')).json.data.server_error_cooldown_seconds, 5);
  for (const bad of [-1, 86_401, 1.5, '5', null]) {
    const res = await gw.api('PUT', '/api/settings', { body: { server_error_cooldown_seconds: bad } });
    t.equal(res.status, 400, `${JSON.stringify(bad)} is refused`);
    t.match(res.json.data, { field: 'server_error_cooldown_seconds' });
  }
  t.equal((await gw.api('GET', '/api/settings')).json.data.server_error_cooldown_seconds, 5, 'nothing refused was saved');
  const saved = await gw.api('PUT', '/api/settings', { body: { server_error_cooldown_seconds: 0 } });
  t.match(saved.json.data, { server_error_cooldown_seconds: 0, credential_cooldown_seconds: 60 }, '0 (no cooldown of its own) is taken; the other cooldown is its own');
  t.equal((await gw.api('PUT', '/api/settings', { body: { server_error_cooldown_seconds: 86_400 } })).status, 200);
  await gw.restart();
  t.equal((await gw.api('GET', '/api/settings')).json.data.server_error_cooldown_seconds, 86_400, 'durable');
});

t.test('a stored server_error_cooldown_seconds the schema refuses stops the start, naming the setting', async (t) => {
  const dataDir = tempDataDir(t);
  writeFileSync(
    path.join(dataDir, 'config.json'),
    JSON.stringify({ version: 1, next_id: { group: 1, credential: 1, access_key: 1, credential_stage: 1 }, groups: [], credentials: [], access_keys: [], settings: { server_error_cooldown_seconds: -1 }, model_prices: [], credential_stages: [] }),
  );
  const err = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
  // A server that started after all is closed, not left to hold the test open.
  if (!(err instanceof Error)) t.teardown(() => (err as { close(): Promise<void> }).close());
  t.ok(err instanceof StoreFileError, 'a StoreFileError');
  t.match((err as Error).message, /settings\.server_error_cooldown_seconds is -1, which must be >= 0/);
});
