import { existsSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { AUTH_KEY, seedAccessKey, seedGroup, startGateway, tempDataDir } from './support/gateway.ts';

t.test('restart durability: write, stop, start, read back', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw, ['m1', 'm2']);
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-durable-00000001' });
  const key = await seedAccessKey(gw, { record_request_body: true });
  await gw.api('PUT', '/api/settings', { body: { log_retention_days: 3 } });
  await gw.api('PUT', '/api/model-prices/m1', { body: { input_per_mtok: 1, output_per_mtok: 2 } });
  const before = await Promise.all(['/api/groups', `/api/groups/${groupId}/credentials`, '/api/access-keys', '/api/settings', '/api/model-prices'].map((p) => gw.api('GET', p)));
  await gw.stop();
  await gw.restart();
  const after = await Promise.all(['/api/groups', `/api/groups/${groupId}/credentials`, '/api/access-keys', '/api/settings', '/api/model-prices'].map((p) => gw.api('GET', p)));
  t.same(after.map((r) => r.json.data), before.map((r) => r.json.data));
  t.equal((await gw.api('GET', '/api/auth/session', { token: key.value })).status, 200, 'the AccessKey value still authenticates');
  const revealed = await gw.api('POST', `/api/groups/${groupId}/credentials/${before[1]!.json.data[0].id}/reveal`);
  t.equal(revealed.json.data.fields.api_key, 'sk-durable-00000001', 'secrets decrypt after a restart');
  const next = await gw.create('/api/groups', { name: 'next', channel: 'ch02' });
  t.equal(next.json.data.id, groupId + 1, 'ids continue, never reused');
});

t.test('a write completed before close is on disk after close', async (t) => {
  const gw = await startGateway(t);
  const pending = Promise.all(Array.from({ length: 10 }, (_, i) => gw.create('/api/groups', { name: `g${i}`, channel: 'ch02' })));
  await pending;
  await gw.stop();
  const stored = JSON.parse(readFileSync(path.join(gw.dataDir, 'config.json'), 'utf8'));
  t.equal(stored.groups.length, 10, 'every acknowledged write is in the file');
});

for (const [label, content] of [
  ['corrupted', '{"version": 1, "groups": [ nonsense'],
  ['half-written', '{\n  "version": 1,\n  "next_id": {\n    "group": 2,\n    "credential": 1,'],
  ['empty', ''],
  ['of the wrong shape', '{"version": 1, "groups": {}}'],
  ['of an unknown version', '{"version": 9}'],
] as const) {
  t.test(`a ${label} config.json stops the start with an error naming the file and leaves it untouched`, async (t) => {
    const dataDir = tempDataDir(t);
    const gw = await startGateway(t, { dataDir });
    await seedGroup(gw);
    await gw.stop();
    const file = path.join(dataDir, 'config.json');
    writeFileSync(file, content);
    const err = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
    t.ok(err instanceof StoreFileError, 'a StoreFileError');
    t.equal((err as StoreFileError).file, file);
    t.match((err as Error).message, file, 'the message names the file');
    t.match((err as Error).message, /left untouched/);
    t.equal(readFileSync(file, 'utf8'), content, 'the file is exactly as it was');
  });
}

t.test('a half-written temporary file from a crash does not hide the last good state', async (t) => {
  const dataDir = tempDataDir(t);
  const gw = await startGateway(t, { dataDir });
  const id = await seedGroup(gw);
  await gw.stop();
  writeFileSync(path.join(dataDir, '.config.json.tmp'), '{"version": 1, "groups": [');
  await gw.restart();
  t.equal((await gw.api('GET', `/api/groups/${id}`)).status, 200, 'config.json, not the torn temporary, is read');
  await gw.create('/api/groups', { name: 'after', channel: 'ch02' });
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 2, 'and the next write replaces the torn temporary');
});

t.test('stored secrets without their key file stop the start', async (t) => {
  const dataDir = tempDataDir(t);
  const gw = await startGateway(t, { dataDir });
  await seedAccessKey(gw);
  await gw.stop();
  unlinkSync(path.join(dataDir, 'secret.key'));
  const err = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
  t.ok(err instanceof StoreFileError);
  t.match((err as Error).message, /secret\.key: the encryption key file is missing/);
  t.notOk(existsSync(path.join(dataDir, 'secret.key')), 'no new key replaces the lost one');
});

t.test('key file and data directory are readable by the owner only', async (t) => {
  const gw = await startGateway(t);
  t.equal(statSync(path.join(gw.dataDir, 'secret.key')).mode & 0o777, 0o600);
  t.equal(statSync(gw.dataDir).mode & 0o777, 0o700);
});

t.test('AUTH_KEY: from the environment, else generated once into <data>/auth_key', async (t) => {
  const dataDir = tempDataDir(t);
  const lines: string[] = [];
  const first = await createServer({ dataDir, port: 0, env: {}, log: (l) => lines.push(l) });
  const file = path.join(dataDir, 'auth_key');
  const generated = readFileSync(file, 'utf8').trim();
  t.match(generated, /^sy-admin-[A-Za-z0-9_-]{43}$/);
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the owner only');
  t.equal(lines.filter((l) => l.includes(file)).length, 1, 'says once where it is');
  t.notMatch(lines.join('\n'), generated, 'and never prints the key itself');
  const session = await fetch(`${first.url}/api/auth/session`, { headers: { authorization: `Bearer ${generated}` } });
  t.equal(session.status, 200);
  await first.close();

  const again: string[] = [];
  const second = await createServer({ dataDir, port: 0, env: {}, log: (l) => again.push(l) });
  t.same(again, [`switchyard: the AUTH_KEY (management key) is in ${file}.`], 'the second start names the file again, not the key');
  t.equal((await fetch(`${second.url}/api/auth/session`, { headers: { authorization: `Bearer ${generated}` } })).status, 200, 'the same key');
  await second.close();

  const fromEnv = await createServer({ dataDir, port: 0, env: { AUTH_KEY: 'env-provided-key' }, log: () => undefined });
  t.equal((await fetch(`${fromEnv.url}/api/auth/session`, { headers: { authorization: 'Bearer env-provided-key' } })).status, 200);
  t.equal((await fetch(`${fromEnv.url}/api/auth/session`, { headers: { authorization: `Bearer ${generated}` } })).status, 401, 'the environment wins');
  await fromEnv.close();
});
