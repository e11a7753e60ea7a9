import t, { type Test } from 'tap';
import { ConfigSnapshot } from '../../src/dataplane/config-snapshot.ts';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// A cooldown verdict is not a configuration write (the store writes those of a window together):
// the snapshot shows it without a rebuild, by swapping in only its Group's credential array.

async function countedStore(t: Test) {
  const store = await openLowdbConfigStore(tempDataDir(t), { cooldownFlushMs: 3_600_000 });
  t.teardown(() => store.close());
  const reads = { lists: 0 };
  const list = store.groups.list.bind(store.groups);
  store.groups.list = () => {
    reads.lists++;
    return list();
  };
  const groups = [];
  for (const name of ['a', 'b']) {
    const group = await store.groups.create({ name, channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'm', upstream: 'm' }] });
    const made = await store.credentials.createMany(group.id, [1, 2].map((i) => ({ kind: 'api_key', values: { api_key: `sk-snapshot-${name}-${i}-000000` }, secretFields: ['api_key'] })));
    groups.push({ id: group.id, credentials: made.map((o) => ('created' in o ? o.created : undefined)).filter((c) => c !== undefined) });
  }
  return { store, reads, groups };
}

for (const read of ['fresh', 'current'] as const) {
  t.test(`${read}() shows a cooldown verdict at once, swapping only its Group's array, without a rebuild`, async (t) => {
    const { store, reads, groups } = await countedStore(t);
    const [a, b] = groups as [(typeof groups)[number], (typeof groups)[number]];
    const snapshot = new ConfigSnapshot(store);
    const snap = await snapshot.current();
    const [arrayA, arrayB] = [snap.credentialsByGroup.get(a.id), snap.credentialsByGroup.get(b.id)];
    const [cooled, other] = arrayA!;
    const until = new Date(Date.now() + 60_000).toISOString();
    await store.credentials.setState(a.id, cooled!.id, { to: 'cooldown', until }, { expectedRevision: cooled!.revision });
    const rebuilds = reads.lists;
    const seen = read === 'fresh' ? snapshot.fresh() : await snapshot.current();
    t.equal(seen, snap, 'the same snapshot');
    t.equal(reads.lists, rebuilds, 'not rebuilt');
    const nowA = seen!.credentialsByGroup.get(a.id)!;
    t.not(nowA, arrayA, "a new array for the cooled credential's Group");
    t.match(nowA[0], { id: cooled!.id, state: 'cooldown', cooldown_until: until });
    t.equal(nowA[1], other, 'its other credential the same view');
    t.same(arrayA![0]!.state, 'active', 'the old array left as it was, for the requests that hold it');
    t.equal(seen!.credentialsByGroup.get(b.id), arrayB, 'the other Group untouched');
    t.equal((read === 'fresh' ? snapshot.fresh() : await snapshot.current())?.credentialsByGroup.get(a.id), nowA, 'swapped once');
  });
}
