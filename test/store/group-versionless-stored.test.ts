import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { AUTH_KEY, seedGroup, startGateway } from '../management/support/gateway.ts';

// A Group's versionless_api in config.json: written by the store, absent in rows stored before
// it existed (read as false), and checked on load like every field the API takes.

t.test('a Group stored before versionless_api existed loads, reads false, and takes the flag later', async (t) => {
  const gw = await startGateway(t);
  const id = await seedGroup(gw, ['m1']);
  await gw.stop();
  const file = path.join(gw.dataDir, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { groups: Record<string, unknown>[] };
  t.equal(config.groups[0]!.versionless_api, false, 'the store writes it');
  delete config.groups[0]!.versionless_api;
  writeFileSync(file, JSON.stringify(config));
  await gw.restart();
  t.equal((await gw.api('GET', `/api/groups/${id}`)).json.data.versionless_api, false);
  t.equal((await gw.api('GET', '/api/groups')).json.data[0].versionless_api, false);
  t.equal((await gw.api('PUT', `/api/groups/${id}/settings`, { body: { name: 'renamed' } })).json.data.versionless_api, false);
  t.equal((await gw.api('PUT', `/api/groups/${id}/settings`, { body: { versionless_api: true } })).json.data.versionless_api, true);
});

t.test('a stored versionless_api that is no boolean stops the start, naming the field', async (t) => {
  const gw = await startGateway(t);
  await seedGroup(gw, ['m1']);
  await gw.stop();
  const file = path.join(gw.dataDir, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { groups: Record<string, unknown>[] };
  config.groups[0]!.versionless_api = 'yes';
  writeFileSync(file, JSON.stringify(config));
  const err = await createServer({ dataDir: gw.dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
  t.ok(err instanceof StoreFileError, 'a StoreFileError');
  t.match((err as Error).message, 'groups[0].versionless_api: must be boolean');
});

t.test("a settings PUT that changes versionless_api ends the cooldown of every credential of the Group, its own base URL's too; one that keeps it does not", async (t) => {
  const gw = await startGateway(t);
  const id = await seedGroup(gw, ['m1'], { channel: 'ch32', base_url: 'https://group.test' });
  const connected = await gw.create(`/api/groups/${id}/credentials/connect`, { kind: 'api_key_base_url', fields: { api_key: 'sk-own-address-0001', base_url: 'https://own.test/openai' } });
  t.equal(connected.status, 201);
  await gw.stop();
  const file = path.join(gw.dataDir, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { credentials: Record<string, unknown>[] };
  for (const c of config.credentials) c.cooldown_until = new Date(gw.clock.now + 3_600_000).toISOString();
  writeFileSync(file, JSON.stringify(config));
  await gw.restart();
  const credential = async () => (await gw.api('GET', `/api/groups/${id}/credentials/${connected.json.data.id}`)).json.data;
  const before = (await credential()).revision as number;
  t.equal((await gw.api('PUT', `/api/groups/${id}/settings`, { body: { versionless_api: false } })).status, 200);
  t.match(await credential(), { state: 'cooldown', revision: before }, 'the same value: nothing moved');
  t.equal((await gw.api('PUT', `/api/groups/${id}/settings`, { body: { versionless_api: true } })).status, 200);
  t.match(await credential(), { state: 'active', cooldown_until: null, revision: before + 1 }, 'its upstream URL moved: the cooldown ends');
});
