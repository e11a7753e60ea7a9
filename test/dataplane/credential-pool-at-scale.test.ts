import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ConfigSnapshot } from '../../src/dataplane/config-snapshot.ts';
import { CredentialPool } from '../../src/dataplane/credential-pool.ts';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import type { CredentialView } from '../../src/store/records.ts';
import { counted } from './helpers/counted-reads.ts';

// A Group of thousands of credentials: the pick follows the weights and equal weights take
// turns as with a few, and a request's pick does not read the whole Group each time.

const POOL = 2000;

/** A store with one Group of POOL api_key credentials of the given weights, its snapshot's array, and a fresh pool. */
async function setup(t: Test, weightOf: (i: number) => number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-pool-scale-'));
  const store = await openLowdbConfigStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const group = await store.groups.create({ name: 'big', channel: 'ch02', base_url: 'http://127.0.0.1:1', models: [{ external: 'm', upstream: 'm' }] });
  await store.credentials.createMany(
    group.id,
    Array.from({ length: POOL }, (_, i) => ({ kind: 'api_key', values: { api_key: `sk-scale-${String(i).padStart(6, '0')}-abcdefgh` }, secretFields: ['api_key'], weight: weightOf(i) })),
  );
  const snapshot = new ConfigSnapshot(store);
  const credentialsNow = async () => (await snapshot.current()).credentialsByGroup.get(group.id)!;
  return { store, group, credentialsNow, pool: new CredentialPool(store.credentials) };
}

/** Counts the pick of `picks` turns by credential id. */
function firstPicks(pool: CredentialPool, group: { id: number; channel: string }, credentials: readonly CredentialView[], picks: number, now: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (let i = 0; i < picks; i++) {
    const id = pool.usable(group, credentials, now).at(0)!.id;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

t.test('mixed weights over 2,000 credentials: every period of picks gives each exactly its weight', async (t) => {
  const { group, credentialsNow, pool } = await setup(t, (i) => (i % 4) + 1);
  const credentials = await credentialsNow();
  const total = credentials.reduce((sum, c) => sum + c.weight, 0);
  const counts = firstPicks(pool, group, credentials, 3 * total, Date.now());
  const off = credentials.filter((c) => counts.get(c.id) !== 3 * c.weight);
  t.same(off.map((c) => [c.id, c.weight, counts.get(c.id)]), [], 'three periods: three times its weight each');
  const turn = pool.usable(group, credentials, Date.now());
  t.equal(turn.length, POOL, 'every usable credential is in the turn');
  t.equal(new Set(Array.from({ length: turn.length }, (_, i) => turn.at(i)!.id)).size, POOL, 'the fallbacks are the others, each once');
  t.equal(turn.at(-1), turn.at(POOL - 1), 'the last to try, counted from the end');
});

t.test('equal weights over 2,000 credentials take turns: each once before any twice', async (t) => {
  const { group, credentialsNow, pool } = await setup(t, () => 1);
  const credentials = await credentialsNow();
  const now = Date.now();
  for (let round = 0; round < 2; round++) t.equal(firstPicks(pool, group, credentials, POOL, now).size, POOL, `round ${round + 1}: every credential picked once`);
});

t.test('a heavy credential\'s turns are spread over the period, not back to back', async (t) => {
  const { group, credentialsNow, pool } = await setup(t, (i) => (i === 0 ? 500 : 1));
  const credentials = await credentialsNow();
  const heavy = credentials[0]!.id;
  let run = 0;
  let longest = 0;
  for (let i = 0; i < 3 * (500 + POOL - 1); i++) {
    run = pool.usable(group, credentials, Date.now()).at(0)!.id === heavy ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  // 500 of 2,499 positions: about one pick in five is the heavy one's.
  t.ok(longest <= 2, `at most two in a row (got ${longest})`);
});

t.test('a cooling credential is skipped, and is picked again once its cooldown ends, without a configuration change', async (t) => {
  const { store, group, credentialsNow, pool } = await setup(t, (i) => (i % 3) + 1);
  const now = Date.now();
  const cooled = (await store.credentials.list(group.id))[7]!;
  await store.credentials.setState(group.id, cooled.id, { to: 'cooldown', until: new Date(now + 60_000).toISOString() });
  const credentials = await credentialsNow();
  const total = credentials.reduce((sum, c) => sum + c.weight, 0);
  const during = firstPicks(pool, group, credentials, total, now + 1000);
  t.equal(during.get(cooled.id), undefined, 'never picked while it cools down');
  t.equal(pool.usable(group, credentials, now + 1000).length, POOL - 1, 'nor tried as a fallback');
  // The same snapshot: only the clock has moved past the cooldown's end.
  const after = firstPicks(pool, group, credentials, 2 * total, now + 60_001);
  t.equal(after.get(cooled.id), 2 * cooled.weight, 'picked again by its weight once the cooldown has ended');
  t.equal(pool.usable(group, credentials, now + 60_001).length, POOL, 'and among the fallbacks');
});

t.test('the pick reads the Group\'s credentials once per change of their states, not once per request', async (t) => {
  for (const [name, weightOf] of [
    ['equal weights', () => 1],
    ['mixed weights', (i: number) => (i % 5) + 1],
  ] as const) {
    const { store, group, credentialsNow, pool } = await setup(t, weightOf);
    const now = Date.now();
    const first = (await store.credentials.list(group.id))[0]!;
    await store.credentials.setState(group.id, first.id, { to: 'cooldown', until: new Date(now + 60_000).toISOString() });
    const { array, reads } = counted(await credentialsNow());
    firstPicks(pool, group, array, 1000, now);
    t.ok(reads() <= POOL, `${name}: 1,000 picks read the ${POOL} credentials once (${reads()} reads)`);
    firstPicks(pool, group, array, 1000, now + 60_001);
    t.ok(reads() <= 2 * POOL, `${name}: and once more when the cooldown ends (${reads()} reads)`);
    t.equal(pool.servable(group, array, now + 60_001).length, POOL, `${name}: route inspection's list needs no more reads`);
    t.ok(reads() <= 2 * POOL);
  }
});
