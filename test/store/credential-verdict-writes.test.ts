import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { fillTheDisk } from '../helpers/fill-the-disk.ts';
import { ConfigStoreUnavailableError } from '../../src/store/config-store-unavailable-error.ts';
import { openLowdbConfigStore, type ConfigStore, type CredentialView } from '../../src/store/index.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// Credential verdicts (a cooldown or disable for the revision a request used) under an upstream
// outage: concurrent disables share a write of config.json, each still acknowledged only once on
// disk; cooldowns are written with the others of their window (pending-cooldowns.test.ts).

async function storeWith(t: Test, dir: string, count: number): Promise<{ store: ConfigStore; groupId: number; creds: CredentialView[] }> {
  const store = await openLowdbConfigStore(dir);
  t.teardown(() => store.close());
  const group = await store.groups.create({ name: 'g', channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'm', upstream: 'm' }] });
  const made = await store.credentials.createMany(
    group.id,
    Array.from({ length: count }, (_, i) => ({ kind: 'api_key', values: { api_key: `sk-verdict-${String(i).padStart(4, '0')}-000000` }, secretFields: ['api_key'] })),
  );
  return { store, groupId: group.id, creds: made.map((o) => ('created' in o ? o.created : undefined)).filter((c) => c !== undefined) };
}

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

t.test('50 concurrent verdicts on distinct credentials all land, in far fewer writes than 50', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 50);
  const until = inAnHour();
  const before = store.generation();
  const seenOnResolve = await Promise.all(
    creds.map(async (c, i) => {
      const change = i % 2 === 0 ? ({ to: 'cooldown', until } as const) : ({ to: 'disabled', reason: 'upstream answered 401' } as const);
      const view = await store.credentials.setState(groupId, c.id, change, { expectedRevision: c.revision });
      return { view, stored: await store.credentials.get(groupId, c.id) };
    }),
  );
  const writes = store.generation() - before;
  t.ok(writes >= 1 && writes < 10, `written in ${writes} write(s), not one each`);
  const expected = creds.map((_, i) => (i % 2 === 0 ? 'cooldown' : 'disabled'));
  t.same(
    seenOnResolve.map(({ view }) => view?.state),
    expected,
    'each verdict gets its own result',
  );
  t.same(
    seenOnResolve.map(({ stored }) => stored?.state),
    expected,
    'each is visible once its promise resolves',
  );
  await store.close();

  const reopened = await openLowdbConfigStore(dir);
  t.teardown(() => reopened.close());
  const states = (await reopened.credentials.list(groupId)).map((c) => c.state);
  t.same(states, expected, 'every verdict is in the file');
});

t.test('a write the disk refuses rejects every verdict that shared it, and the data stays as on disk', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 20);
  const before = await store.credentials.list(groupId);
  const fileBefore = readFileSync(path.join(dir, 'config.json'), 'utf8');
  const freeTheDisk = fillTheDisk(t);
  const verdicts = creds.map((c) => store.credentials.setState(groupId, c.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: c.revision }));
  // A second disable of the first credential: no change only because of the one before it in the same write.
  verdicts.push(store.credentials.setState(groupId, creds[0]!.id, { to: 'disabled', reason: 'upstream answered 403' }, { expectedRevision: creds[0]!.revision }));
  const outcomes = await Promise.allSettled(verdicts);
  t.same(
    outcomes.map((o) => o.status === 'rejected' && o.reason instanceof ConfigStoreUnavailableError),
    verdicts.map(() => true),
    'every verdict rejects with the store-unavailable error',
  );
  t.ok(store.writesFailing(), 'the store says its writes fail');
  t.same(await store.credentials.list(groupId), before, 'no verdict is in the data');
  t.equal(readFileSync(path.join(dir, 'config.json'), 'utf8'), fileBefore, 'nor in the file');
  t.notOk(readdirSync(dir).some((f) => f.endsWith('.tmp')), 'no temporary file left behind');

  freeTheDisk();
  const retried = await store.credentials.setState(groupId, creds[0]!.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: creds[0]!.revision });
  t.equal(retried?.state, 'disabled', 'the same verdict lands once the disk takes writes again');
  t.notOk(store.writesFailing());
});

t.test('verdicts and an operator disable queued between them are written in the order asked', async (t) => {
  const { store, groupId, creds } = await storeWith(t, tempDataDir(t), 2);
  const [a, b] = creds as [CredentialView, CredentialView];
  const cooled = store.credentials.setState(groupId, a.id, { to: 'cooldown', until: inAnHour() }, { expectedRevision: a.revision });
  const handDisabled = store.credentials.setState(groupId, a.id, { to: 'disabled', reason: 'by hand' });
  const disabled = store.credentials.setState(groupId, a.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: a.revision });
  const other = store.credentials.setState(groupId, b.id, { to: 'disabled', reason: 'upstream answered 403' }, { expectedRevision: b.revision });
  t.equal((await cooled)?.state, 'cooldown', 'the first verdict lands before the hand disable');
  t.match(await handDisabled, { state: 'disabled', disabled_reason: 'by hand', revision: a.revision + 1 });
  t.equal(await disabled, undefined, 'the verdict queued after the hand disable finds the credential changed and is dropped');
  t.match(await other, { state: 'disabled', disabled_reason: 'upstream answered 403' }, 'a verdict on another credential lands');
  t.match(await store.credentials.get(groupId, a.id), { state: 'disabled', disabled_reason: 'by hand' });
});

t.test('a cooldown ending less than a second after the stored one changes nothing and notes nothing', async (t) => {
  const { store, groupId, creds } = await storeWith(t, tempDataDir(t), 1);
  const c = creds[0]!;
  const end = Date.now() + 60_000;
  const at = (ms: number) => new Date(end + ms).toISOString();
  const generation = store.generation();
  await store.credentials.setState(groupId, c.id, { to: 'cooldown', until: at(0) }, { expectedRevision: c.revision });
  const before = store.cooldownVersion();
  const near = await store.credentials.setState(groupId, c.id, { to: 'cooldown', until: at(999) }, { expectedRevision: c.revision });
  t.equal(near?.cooldown_until, at(0), '999 ms later: the stored end stands');
  t.equal(store.cooldownVersion(), before, 'and nothing was noted');
  const later = await store.credentials.setState(groupId, c.id, { to: 'cooldown', until: at(1000) }, { expectedRevision: c.revision });
  t.equal(later?.cooldown_until, at(1000), 'a second later: the longer cooldown is noted');
  t.equal(store.cooldownVersion(), before + 1);
  t.equal(store.generation(), generation, 'for the next flush to write, not each in a write');
});
