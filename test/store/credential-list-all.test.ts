import t, { type Test } from 'tap';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import { ManualClock, tempDataDir } from '../management/support/gateway.ts';

// listAll is checked against every CredentialStore implementation: the lowdb store is the only one.

async function storeWithGroups(t: Test) {
  const clock = new ManualClock();
  const store = await openLowdbConfigStore(tempDataDir(t), { clock: clock.read });
  t.teardown(() => store.close());
  const group = (name: string) => store.groups.create({ name, channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: name, upstream: name }] });
  const [a, b, empty] = [await group('a'), await group('b'), await group('empty')];
  const ids: number[] = [];
  // Interleaved between the Groups, as imports over time leave them in the file.
  for (let i = 0; i < 3; i++) {
    for (const g of [a, b]) {
      const [made] = await store.credentials.createMany(g.id, [{ kind: 'api_key', values: { api_key: `sk-list-all-${g.name}-${i}-000000` }, secretFields: ['api_key'] }]);
      ids.push(made && 'created' in made ? made.created.id : 0);
    }
  }
  return { store, clock, a, b, empty, ids };
}

t.test('listAll holds, for every Group, the same views as list(Group), and no entry for a Group without credentials', async (t) => {
  const { store, clock, a, b, empty, ids } = await storeWithGroups(t);
  await store.credentials.setState(a.id, ids[0]!, { to: 'cooldown', until: new Date(clock.now + 60_000).toISOString() });
  await store.credentials.setState(b.id, ids[1]!, { to: 'disabled', reason: 'by hand' });
  await store.credentials.update(a.id, ids[2]!, { name: 'renamed', weight: 3 });
  const all = await store.credentials.listAll();
  t.same([...all.keys()].sort(), [a.id, b.id].sort());
  for (const g of [a, b]) t.same(all.get(g.id), await store.credentials.list(g.id), `Group ${g.name}`);
  t.equal(all.get(empty.id), undefined);
  t.same(all.get(a.id)?.map((c) => c.state), ['cooldown', 'active', 'active']);
  t.same(all.get(b.id)?.map((c) => c.state), ['disabled', 'active', 'active']);
});

t.test('listAll hands out the same view again for a credential unchanged since, and a new one for one that changed', async (t) => {
  const { store, clock, a, ids } = await storeWithGroups(t);
  const [cooled, renamed, untouched] = [ids[0]!, ids[2]!, ids[4]!];
  await store.credentials.setState(a.id, cooled, { to: 'cooldown', until: new Date(clock.now + 60_000).toISOString() });
  const byId = async () => new Map([...(await store.credentials.listAll()).values()].flat().map((c) => [c.id, c]));
  const first = await byId();
  // A write elsewhere in the file copies every stored record; the views stay the same objects.
  await store.settings.save({});
  const second = await byId();
  for (const id of ids) t.equal(second.get(id), first.get(id), `credential ${id} unchanged: the same view`);

  await store.credentials.update(a.id, renamed, { name: 'renamed' });
  const third = await byId();
  t.not(third.get(renamed), second.get(renamed), 'a renamed credential: a new view');
  t.equal(third.get(renamed)?.name, 'renamed');
  t.equal(third.get(untouched), second.get(untouched));

  // A verdict keeps the revision: told by what it changes.
  await store.credentials.setState(a.id, untouched, { to: 'cooldown', until: new Date(clock.now + 30_000).toISOString() }, { expectedRevision: third.get(untouched)!.revision });
  const fourth = await byId();
  t.not(fourth.get(untouched), third.get(untouched), 'a verdict: a new view');
  t.match(fourth.get(untouched), { state: 'cooldown', revision: third.get(untouched)!.revision });

  // Nothing written: the cooldown ends with time alone.
  clock.advance(61_000);
  const fifth = await byId();
  t.not(fifth.get(cooled), fourth.get(cooled), 'a cooldown that ended: a new view');
  t.equal(fifth.get(cooled)?.state, 'active');
  t.same([...(await store.credentials.listAll()).get(a.id)!], await store.credentials.list(a.id), 'still the same as list');
});
