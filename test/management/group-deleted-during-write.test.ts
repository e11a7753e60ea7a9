import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import { UnknownGroupError } from '../../src/store/config-store.ts';
import type { GroupRecord } from '../../src/store/records.ts';
import { type Gateway, seedGroup, startGateway, tempDataDir } from './support/gateway.ts';

const CONFIG_FILE = 'config.json';

function storedConfig(dataDir: string): { credentials: Array<{ group_id: number }>; access_keys: Array<{ groups: number[] | null }>; credential_stages: unknown[] } {
  return JSON.parse(readFileSync(path.join(dataDir, CONFIG_FILE), 'utf8'));
}

/** The route's existence check finds the Group, then the Group is deleted before the route writes. */
function deleteGroupRightAfterCheck(gw: Gateway, groupId: number): void {
  const groups = gw.server.store.groups;
  const get = groups.get.bind(groups);
  const list = groups.list.bind(groups);
  groups.get = async (id: number) => {
    const found = await get(id);
    if (id === groupId) await groups.delete(groupId);
    return found;
  };
  groups.list = async (): Promise<GroupRecord[]> => {
    const all = await list();
    await groups.delete(groupId);
    return all;
  };
}

t.test('store: writes naming a deleted Group reject with UnknownGroupError and store nothing', async (t) => {
  const dataDir = tempDataDir(t);
  const store = await openLowdbConfigStore(dataDir);
  t.teardown(() => store.close());
  const live = await store.groups.create({ name: 'live', channel: 'ch02' });
  const gone = await store.groups.create({ name: 'gone', channel: 'ch02' });
  const key = await store.accessKeys.create({ name: 'k', protocols: [], groups: [live.id] });
  t.ok(await store.groups.delete(gone.id));
  const before = readFileSync(path.join(dataDir, CONFIG_FILE), 'utf8');

  const item = { kind: 'api_key', values: { api_key: 'sk-orphan-000000001' }, secretFields: ['api_key'] };
  await t.rejects(store.credentials.createMany(gone.id, [item, item]), new UnknownGroupError(gone.id), 'credential import/connect');
  await t.rejects(store.accessKeys.create({ name: 'k2', protocols: [], groups: [live.id, gone.id] }), { name: 'UnknownGroupError', groupId: gone.id }, 'access key create');
  await t.rejects(store.accessKeys.update(key.record.id, { groups: [gone.id] }), { name: 'UnknownGroupError', groupId: gone.id }, 'access key update');
  await t.rejects(
    store.credentialStages.create({ group_id: gone.id, kind: 'oauth', flow: 'device_code', expires_at: '2030-01-01T00:00:00.000Z', authorization: null }),
    { name: 'UnknownGroupError', groupId: gone.id },
    'credential stage create',
  );

  t.equal(readFileSync(path.join(dataDir, CONFIG_FILE), 'utf8'), before, 'the data file is unchanged');
  t.same(await store.credentials.list(gone.id), []);
  t.same((await store.accessKeys.get(key.record.id))?.groups, [live.id], 'the refused update changed nothing');
  t.equal((await store.accessKeys.list()).length, 1);
  t.same(await store.credentialStages.list(), []);
  t.same((await store.credentials.createMany(live.id, [item])).map((o) => 'created' in o), [true], 'a live Group still takes writes');
});

t.test('import into a Group deleted after the route checked it: 404 and no orphaned credentials', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  deleteGroupRightAfterCheck(gw, groupId);
  const res = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-orphan-000000001\nsk-orphan-000000002' });
  t.equal(res.status, 404);
  t.equal(res.json.code, 'NOT_FOUND');
  t.same(res.json.data, { resource: 'group', id: groupId });
  t.equal((await gw.api('GET', `/api/groups/${groupId}`)).status, 404, 'the Group is deleted');
  t.same(storedConfig(gw.dataDir).credentials, [], 'nothing stored for the deleted Group');
});

t.test('connect into a Group deleted after the route checked it: 404 and nothing stored', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  deleteGroupRightAfterCheck(gw, groupId);
  const res = await gw.create(`/api/groups/${groupId}/credentials/connect`, { kind: 'api_key', fields: { api_key: 'sk-orphan-000000003' } });
  t.equal(res.status, 404);
  t.same(res.json.data, { resource: 'group', id: groupId });
  t.same(storedConfig(gw.dataDir).credentials, []);
});

t.test('access key listing a Group deleted after the route checked it: unknown_group and nothing stored', async (t) => {
  const gw = await startGateway(t);
  const other = await seedGroup(gw);
  const groupId = await seedGroup(gw);
  const kept = (await gw.create('/api/access-keys', { name: 'kept', protocols: [], groups: [other] })).json.data;
  deleteGroupRightAfterCheck(gw, groupId);

  const created = await gw.create('/api/access-keys', { name: 'k', protocols: [], groups: [other, groupId] });
  t.equal(created.status, 400);
  t.equal(created.json.code, 'VALIDATION_FAILED');
  t.same(created.json.data, { field: 'groups[1]', reason: 'unknown_group' });
  t.same(storedConfig(gw.dataDir).access_keys.map((k) => k.groups), [[other]], 'no new key');

  const groupB = await seedGroup(gw);
  deleteGroupRightAfterCheck(gw, groupB);
  const patched = await gw.api('PATCH', `/api/access-keys/${kept.id}`, { body: { groups: [groupB] } });
  t.equal(patched.status, 400);
  t.same(patched.json.data, { field: 'groups[0]', reason: 'unknown_group' });
  t.same((await gw.api('GET', `/api/access-keys/${kept.id}`)).json.data.groups, [other], 'the key is unchanged');
});

t.test('credential stage for a Group deleted after the route checked it: 404 and no stage stored', async (t) => {
  const gw = await startGateway(t);
  const groupId = (await gw.create('/api/groups', { name: 'subscription', channel: 'ch10' })).json.data.id as number;
  deleteGroupRightAfterCheck(gw, groupId);
  const res = await gw.api('POST', '/api/credential-stages', { body: { group_id: groupId, kind: 'oauth_json' } });
  t.equal(res.status, 404);
  t.same(res.json.data, { resource: 'group', id: groupId });
  t.same(storedConfig(gw.dataDir).credential_stages, []);
});
