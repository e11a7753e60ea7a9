import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { fillTheDisk } from '../helpers/fill-the-disk.ts';
import { holdTheNextWrite } from '../helpers/hold-the-next-write.ts';
import { ConfigStoreUnavailableError } from '../../src/store/config-store-unavailable-error.ts';
import { openLowdbConfigStore, type ConfigStore, type CredentialStateOptions, type CredentialView } from '../../src/store/index.ts';
import { underIdempotencyKey } from '../../src/store/lowdb/idempotency-journal.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// A cooldown verdict (a 429, a 5xx, a failed connection, for the revision a request used) is
// taken in memory and written with the others of its window, not each in a write of its own:
// every read shows it at once, config.json gets it at the flush or at close.

const SHORT_WINDOW_MS = 20;
const LONG_WINDOW_MS = 3_600_000;

async function storeWith(t: Test, dir: string, count: number, cooldownFlushMs: number) {
  const store = await openLowdbConfigStore(dir, { cooldownFlushMs });
  t.teardown(() => store.close());
  const group = await store.groups.create({ name: 'g', channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'm', upstream: 'm' }] });
  const made = await store.credentials.createMany(
    group.id,
    Array.from({ length: count }, (_, i) => ({ kind: 'api_key', values: { api_key: `sk-pending-${String(i).padStart(4, '0')}-000000` }, secretFields: ['api_key'] })),
  );
  const creds = made.map((o) => ('created' in o ? o.created : undefined)).filter((c) => c !== undefined);
  return { store, groupId: group.id, creds };
}

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const configFile = (dir: string) => path.join(dir, 'config.json');
/** What config.json holds for one credential. */
const onDisk = (dir: string, id: number) => (JSON.parse(readFileSync(configFile(dir), 'utf8')) as { credentials: Array<{ id: number; cooldown_until: string | null }> }).credentials.find((c) => c.id === id);
const cool = (store: ConfigStore, groupId: number, c: CredentialView, until: string) => store.credentials.setState(groupId, c.id, { to: 'cooldown', until }, { expectedRevision: c.revision });

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error(`gave up waiting for ${what}`);
}

/** Reopens the data directory (after the store closed) and reads the credential there. */
async function reopened(t: Test, dir: string, groupId: number, id: number): Promise<CredentialView | undefined> {
  const store = await openLowdbConfigStore(dir);
  t.teardown(() => store.close());
  return store.credentials.get(groupId, id);
}

t.test('a cooldown verdict does not rewrite config.json, yet every read shows it', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 2, LONG_WINDOW_MS);
  const [c] = creds as [CredentialView];
  const file = () => ({ ino: statSync(configFile(dir)).ino, text: readFileSync(configFile(dir), 'utf8') });
  const before = { file: file(), generation: store.generation(), version: store.cooldownVersion() };
  const end = inMs(60_000);
  t.match(await cool(store, groupId, c, end), { state: 'cooldown', cooldown_until: end, revision: c.revision }, 'the view as the verdict leaves it');
  t.same(file(), before.file, 'config.json is not rewritten');
  t.equal(store.generation(), before.generation, 'the generation stands');
  t.not(store.cooldownVersion(), before.version, 'the cooldown version moved');
  t.match(await store.credentials.get(groupId, c.id), { state: 'cooldown', cooldown_until: end });
  t.same((await store.credentials.list(groupId)).map((v) => v.state), ['cooldown', 'active']);
  t.same((await store.credentials.listAll()).get(groupId)?.map((v) => v.state), ['cooldown', 'active']);
  const cooled = store.cooledSince(before.version);
  t.same([...cooled.keys()], [groupId], 'the Group with the cooldown, for the snapshot');
  t.same([...(cooled.get(groupId)?.entries() ?? [])], [[c.id, await store.credentials.get(groupId, c.id)]], 'with only the cooled credential, as it reads now');
  t.same([...store.cooledSince(store.cooldownVersion()).keys()], [], 'nothing since the latest version');
});

t.test('after the flush window config.json holds the cooldown, in one write', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 3, SHORT_WINDOW_MS);
  const generation = store.generation();
  const end = inMs(60_000);
  for (const c of creds) await cool(store, groupId, c, end);
  await until(() => store.generation() !== generation, 'the flush');
  t.equal(store.generation(), generation + 1, 'one write for the window');
  t.same(
    creds.map((c) => onDisk(dir, c.id)?.cooldown_until),
    creds.map(() => end),
    'every cooldown of the window is in the file',
  );
  t.same([...store.cooledSince(0).keys()], [], 'and none is pending any more');
  t.match(await store.credentials.get(groupId, creds[0]!.id), { state: 'cooldown', cooldown_until: end });
});

t.test('close writes the pending cooldowns: the reopened store shows them', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
  const end = inMs(60_000);
  await cool(store, groupId, creds[0]!, end);
  t.equal(onDisk(dir, creds[0]!.id)?.cooldown_until, null, 'not in the file before');
  await store.close();
  t.equal(onDisk(dir, creds[0]!.id)?.cooldown_until, end, 'in the file after');
  t.match(await reopened(t, dir, groupId, creds[0]!.id), { state: 'cooldown', cooldown_until: end });
});

t.test('the longest wait stands, between pending cooldowns and written ones', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 2, LONG_WINDOW_MS);
  const [written, pending] = creds as [CredentialView, CredentialView];
  const hour = inMs(3_600_000);
  const twoHours = inMs(7_200_000);
  const minute = inMs(60_000);
  // Written: a cooldown of an hour in the file, then a shorter verdict.
  await cool(store, groupId, written, hour);
  await store.close();
  const again = await openLowdbConfigStore(dir, { cooldownFlushMs: LONG_WINDOW_MS });
  t.teardown(() => again.close());
  const version = again.cooldownVersion();
  t.match(await cool(again, groupId, written, minute), { cooldown_until: hour }, 'a shorter verdict than the written hour: the hour stands');
  t.equal(again.cooldownVersion(), version, 'and nothing is noted');
  t.match(await cool(again, groupId, written, twoHours), { cooldown_until: twoHours }, 'a longer one than the written hour is taken');
  t.match(await again.credentials.get(groupId, written.id), { cooldown_until: twoHours });
  // Pending: an hour noted, then a shorter verdict, then a longer one.
  await cool(again, groupId, pending, hour);
  t.match(await cool(again, groupId, pending, minute), { cooldown_until: hour }, 'a shorter verdict than the pending hour: the hour stands');
  t.match(await again.credentials.get(groupId, pending.id), { cooldown_until: hour });
  t.match(await cool(again, groupId, pending, twoHours), { cooldown_until: twoHours });
  await again.close();
  t.same([onDisk(dir, written.id)?.cooldown_until, onDisk(dir, pending.id)?.cooldown_until], [twoHours, twoHours], 'the longest of each is written');
});

t.test('a cooldown verdict for a revision the credential has moved past is dropped', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
  const c = creds[0]!;
  const renamed = await store.credentials.update(groupId, c.id, { name: 'renamed' });
  const version = store.cooldownVersion();
  t.equal(await cool(store, groupId, c, inMs(60_000)), undefined, 'undefined, as for a stale verdict');
  t.equal(store.cooldownVersion(), version, 'nothing noted');
  t.match(await store.credentials.get(groupId, c.id), { state: 'active', cooldown_until: null });
  t.match(await cool(store, groupId, renamed!, inMs(60_000)), { state: 'cooldown' }, 'one for the current revision is taken');
});

// Each way of ending a cooldown (or of changing the credential so that it no longer holds)
// ends a pending one too: the views stop showing it and the flush does not write it back.
const endings: Array<[string, (store: ConfigStore, groupId: number, c: CredentialView) => Promise<unknown>, 'gone' | 'active']> = [
  ['a hand enable', (store, groupId, c) => store.credentials.setState(groupId, c.id, { to: 'active' }), 'active'],
  ['an enable verdict', (store, groupId, c) => store.credentials.setState(groupId, c.id, { to: 'active' }, { expectedRevision: c.revision }), 'active'],
  ['a reset credit', (store, groupId, c) => store.credentials.consumeResetCredit(groupId, c.id), 'active'],
  ['a new address of its Group', (store, groupId) => store.groups.update(groupId, { base_url: 'http://127.0.0.1:2' }), 'active'],
  ['a proxy of its own', (store, groupId, c) => store.credentials.update(groupId, c.id, { proxy_url: 'http://127.0.0.1:3' }), 'active'],
  ['a rotated secret', (store, groupId, c) => store.credentials.update(groupId, c.id, { values: { api_key: 'sk-pending-rotated-000000' }, secretFields: ['api_key'] }), 'active'],
  ['a delete', (store, groupId, c) => store.credentials.delete(groupId, c.id), 'gone'],
  ['the delete of its Group', (store, groupId) => store.groups.delete(groupId), 'gone'],
];
for (const [name, end, after] of endings) {
  t.test(`${name} ends a pending cooldown`, async (t) => {
    const dir = tempDataDir(t);
    const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
    const c = creds[0]!;
    await cool(store, groupId, c, inMs(60_000));
    await end(store, groupId, c);
    const view = await store.credentials.get(groupId, c.id);
    if (after === 'gone') t.equal(view, undefined, 'the credential is gone');
    else t.match(view, { state: 'active', cooldown_until: null }, 'the views no longer show it');
    await store.close();
    t.equal(onDisk(dir, c.id)?.cooldown_until ?? null, null, 'and the flush at close does not write it back');
  });
}

// Changes that keep a written cooldown keep a pending one: it goes into their write.
const keepings: Array<[string, (store: ConfigStore, groupId: number, c: CredentialView) => Promise<unknown>, string]> = [
  ['a rename', (store, groupId, c) => store.credentials.update(groupId, c.id, { name: 'renamed' }), 'cooldown'],
  ['a hand disable', (store, groupId, c) => store.credentials.setState(groupId, c.id, { to: 'disabled', reason: 'by hand' }), 'disabled'],
];
for (const [name, change, state] of keepings) {
  t.test(`${name} keeps a pending cooldown, and writes it`, async (t) => {
    const dir = tempDataDir(t);
    const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
    const c = creds[0]!;
    const end = inMs(60_000);
    await cool(store, groupId, c, end);
    await change(store, groupId, c);
    t.match(await store.credentials.get(groupId, c.id), { state, cooldown_until: end });
    t.equal(onDisk(dir, c.id)?.cooldown_until, end, 'in the file with the change');
  });
}

// The disk refusing the write of an enable leaves the credential as its answer (503) says:
// cooling still, now and after a restart, not back in use against an upstream still answering 429.
const enables: Array<[string, (c: CredentialView) => CredentialStateOptions | undefined]> = [
  ['a hand enable', () => undefined],
  ['an enable verdict', (c) => ({ expectedRevision: c.revision })],
];
for (const [name, options] of enables) {
  t.test(`${name} the disk refuses keeps the pending cooldown`, async (t) => {
    const dir = tempDataDir(t);
    const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
    const c = creds[0]!;
    const end = inMs(600_000);
    await cool(store, groupId, c, end);
    const freeTheDisk = fillTheDisk(t);
    await t.rejects(store.credentials.setState(groupId, c.id, { to: 'active' }, options(c)), ConfigStoreUnavailableError);
    t.match(await store.credentials.get(groupId, c.id), { state: 'cooldown', cooldown_until: end }, 'still cooling');
    freeTheDisk();
    await store.close();
    t.match(await reopened(t, dir, groupId, c.id), { state: 'cooldown', cooldown_until: end }, 'and after a restart');
  });
}

t.test('an enable verdict written while a flush waits its turn is not undone by it', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 1, SHORT_WINDOW_MS);
  const c = creds[0]!;
  await cool(store, groupId, c, inMs(600_000));
  // The enable's write is held until the window has passed: the flush takes the cooldown meanwhile.
  const release = holdTheNextWrite(t);
  const enabling = store.credentials.setState(groupId, c.id, { to: 'active' }, { expectedRevision: c.revision });
  await new Promise((resolve) => setTimeout(resolve, SHORT_WINDOW_MS * 10));
  release();
  t.match(await enabling, { state: 'active', cooldown_until: null }, 'the enable answers active');
  await store.close();
  t.equal(onDisk(dir, c.id)?.cooldown_until, null, 'and the flush did not write the cooldown back');
  t.match(await reopened(t, dir, groupId, c.id), { state: 'active' });
});

t.test("a cooldown another answer sets while an enable verdict is being written outlives that enable", async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 1, LONG_WINDOW_MS);
  const c = creds[0]!;
  await cool(store, groupId, c, inMs(600_000));
  const release = holdTheNextWrite(t);
  const enabling = store.credentials.setState(groupId, c.id, { to: 'active' }, { expectedRevision: c.revision });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const later = inMs(1_200_000);
  t.match(await cool(store, groupId, c, later), { state: 'cooldown', cooldown_until: later }, 'the later 429 is taken');
  release();
  await enabling;
  t.match(await store.credentials.get(groupId, c.id), { state: 'cooldown', cooldown_until: later }, 'and still stands once the enable is written');
  await store.close();
  t.equal(onDisk(dir, c.id)?.cooldown_until, later, 'the close writes it');
});

t.test('a flush that lands in the same write as an enable verdict does not put the cooldown back', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 2, SHORT_WINDOW_MS);
  const [c, other] = [creds[0]!, creds[1]!];
  await cool(store, groupId, c, inMs(600_000));
  // A rename holds the write queue; the enable verdict, then the window's flush, queue behind it and share the next write.
  const release = holdTheNextWrite(t);
  const renaming = store.credentials.update(groupId, other.id, { name: 'renamed' });
  await new Promise((resolve) => setTimeout(resolve, 5));
  const enabling = store.credentials.setState(groupId, c.id, { to: 'active' }, { expectedRevision: c.revision });
  await new Promise((resolve) => setTimeout(resolve, SHORT_WINDOW_MS * 10));
  release();
  await renaming;
  t.match(await enabling, { state: 'active', cooldown_until: null }, 'the enable answers active');
  await store.close();
  t.equal(onDisk(dir, c.id)?.cooldown_until, null, 'and the flush in its write did not write the cooldown back');
});

t.test('a flush the disk refuses keeps the cooldowns for the next one, and rejects no verdict', async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 2, SHORT_WINDOW_MS);
  const freeTheDisk = fillTheDisk(t);
  const end = inMs(60_000);
  const views = await Promise.all(creds.map((c) => cool(store, groupId, c, end)));
  t.same(
    views.map((v) => v?.state),
    ['cooldown', 'cooldown'],
    'the verdicts are taken',
  );
  await until(() => store.writesFailing(), 'the refused flush');
  t.same(
    (await store.credentials.list(groupId)).map((v) => v.cooldown_until),
    [end, end],
    'the cooldowns still show',
  );
  t.equal(onDisk(dir, creds[0]!.id)?.cooldown_until, null, 'not in the file');
  freeTheDisk();
  await until(() => !store.writesFailing(), 'the next flush');
  t.same(
    creds.map((c) => onDisk(dir, c.id)?.cooldown_until),
    [end, end],
    'the next flush writes them',
  );
});

t.test("the window's write is no write of the Idempotency-Key under which its first cooldown came", async (t) => {
  const dir = tempDataDir(t);
  const { store, groupId, creds } = await storeWith(t, dir, 1, SHORT_WINDOW_MS);
  const generation = store.generation();
  await underIdempotencyKey('key-of-another-write', () => cool(store, groupId, creds[0]!, inMs(60_000)));
  await until(() => store.generation() !== generation, 'the flush');
  const journal = (JSON.parse(readFileSync(configFile(dir), 'utf8')) as { idempotency_journal?: Array<{ key: string }> }).idempotency_journal ?? [];
  t.same(
    journal.map((note) => note.key),
    [],
    'the key is not noted',
  );
});
