import t, { type Test } from 'tap';
import { ConfigSnapshot } from '../../src/dataplane/config-snapshot.ts';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// A snapshot is rebuilt by reading every Group (groups.list): counted on the real store, a
// rebuild is seen as one such read.

async function countedStore(t: Test) {
  const store = await openLowdbConfigStore(tempDataDir(t));
  t.teardown(() => store.close());
  const reads = { lists: 0 };
  const list = store.groups.list.bind(store.groups);
  store.groups.list = () => {
    reads.lists++;
    return list();
  };
  const group = await store.groups.create({ name: 'g', channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'm', upstream: 'm' }] });
  const made = await store.credentials.createMany(group.id, ['sk-snapshot-one-000001', 'sk-snapshot-two-000002'].map((api_key) => ({ kind: 'api_key', values: { api_key }, secretFields: ['api_key'] })));
  const [a, b] = made.map((o) => ('created' in o ? o.created.id : 0));
  return { store, reads, group, a: a!, b: b! };
}

t.test('requests that find the snapshot stale at once share one rebuild', async (t) => {
  const { store, reads, group, a } = await countedStore(t);
  const snapshot = new ConfigSnapshot(store);
  await snapshot.current();
  await store.credentials.setState(group.id, a, { to: 'cooldown', until: new Date(Date.now() + 60_000).toISOString() });
  const before = reads.lists;
  const snaps = await Promise.all(Array.from({ length: 8 }, () => snapshot.current()));
  t.equal(reads.lists - before, 1, 'one rebuild for eight callers');
  t.ok(snaps.every((s) => s === snaps[0]), 'all got the same snapshot');
  t.equal(snaps[0]!.credentialsByGroup.get(group.id)?.find((c) => c.id === a)?.state, 'cooldown', 'the rebuilt snapshot holds the write');
});

t.test('credentialNow after a write reads the credential and its Group, current, without rebuilding the snapshot', async (t) => {
  const { store, reads, group, a, b } = await countedStore(t);
  const snapshot = new ConfigSnapshot(store);
  await snapshot.current();
  t.same((await snapshot.credentialNow(group.id, a, Date.now()))?.credential.id, a, 'fresh: from the snapshot');
  // A change to the Group since the snapshot, and an attempt's own cooldown (A) after it (a new
  // base_url ends the cooldowns of the credentials that go to it).
  await store.groups.update(group.id, { base_url: 'http://127.0.0.1:2' });
  await store.credentials.setState(group.id, a, { to: 'cooldown', until: new Date(Date.now() + 60_000).toISOString() });
  const before = reads.lists;
  const now = Date.now();
  const [cooled, ...others] = await Promise.all([snapshot.credentialNow(group.id, a, now), ...Array.from({ length: 8 }, () => snapshot.credentialNow(group.id, b, now))]);
  t.equal(reads.lists - before, 0, 'no rebuild');
  t.equal(cooled, undefined, 'a credential cooled since the snapshot is not offered');
  for (const other of others) t.match(other, { credential: { id: b, state: 'active' }, group: { id: group.id, base_url: 'http://127.0.0.1:2' } });
  await store.groups.update(group.id, { enabled: false });
  t.equal(await snapshot.credentialNow(group.id, b, now), undefined, 'nor one of a Group disabled since');
});

t.test('a rebuild reads the credentials of every Group in one read of the store', async (t) => {
  const { store, group, a, b } = await countedStore(t);
  const others = [];
  for (const name of ['h', 'i', 'j']) {
    const other = await store.groups.create({ name, channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: name, upstream: name }] });
    await store.credentials.createMany(other.id, [{ kind: 'api_key', values: { api_key: `sk-snapshot-${name}-0000001` }, secretFields: ['api_key'] }]);
    others.push(other.id);
  }
  const empty = await store.groups.create({ name: 'empty', channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'e', upstream: 'e' }] });
  const calls = { list: 0, listAll: 0 };
  const { list, listAll } = { list: store.credentials.list.bind(store.credentials), listAll: store.credentials.listAll.bind(store.credentials) };
  store.credentials.list = (id) => (calls.list++, list(id));
  store.credentials.listAll = () => (calls.listAll++, listAll());
  const snap = await new ConfigSnapshot(store).current();
  t.same(calls, { list: 0, listAll: 1 }, 'one read for five Groups');
  t.same(snap.credentialsByGroup.get(group.id)?.map((c) => c.id), [a, b]);
  for (const id of others) t.same(snap.credentialsByGroup.get(id), await list(id));
  t.same(snap.credentialsByGroup.get(empty.id), [], 'a Group without credentials has none');
});
