import t from 'tap';
import { attemptOrder, type Candidate } from '../../src/dataplane/plan-candidates.ts';
import { seeded } from '../helpers/seeded-random.ts';

/** A candidate as attemptOrder reads it: only its Group's id, priority and weight. */
const candidate = (id: number, priority: number, weight: number): Candidate => ({ group: { id, priority, weight } }) as unknown as Candidate;


const ids = (order: readonly Candidate[]) => order.map((c) => c.group.id);

t.test('one candidate comes back as given, drawing nothing', async (t) => {
  const one = [candidate(1, 0, 5)];
  t.equal(attemptOrder(one, () => t.fail('no draw') as never), one);
});

t.test('priorities order strictly, higher first, whatever the draws and the order given', async (t) => {
  const random = seeded(1);
  const given = [candidate(1, 0, 3), candidate(2, 5, 1), candidate(3, -2, 9), candidate(4, 5, 4), candidate(5, 0, 1), candidate(6, 10, 1), candidate(7, 0, 2)];
  for (let run = 0; run < 500; run++) {
    const order = attemptOrder(given, random);
    t.same([...ids(order)].sort(), ids(given).sort(), 'every candidate once');
    const priorities = order.map((c) => c.group.priority);
    if (priorities.some((p, i) => i > 0 && p > priorities[i - 1]!)) return t.fail(`out of priority order: ${ids(order)}`);
  }
  t.same(ids(given), [1, 2, 3, 4, 5, 6, 7], 'the input is left as it was');
});

t.test('within a priority the first pick follows the weights', async (t) => {
  const random = seeded(2);
  const tier = [candidate(1, 0, 4), candidate(2, 0, 3), candidate(3, 0, 2), candidate(4, 0, 1), candidate(9, -1, 100)];
  const runs = 40_000;
  const first = new Map<number, number>();
  let lowerLast = 0;
  for (let run = 0; run < runs; run++) {
    const order = attemptOrder(tier, random);
    first.set(order[0]!.group.id, (first.get(order[0]!.group.id) ?? 0) + 1);
    if (order[4]!.group.id === 9) lowerLast++;
  }
  t.equal(lowerLast, runs, 'a lower priority comes after, however heavy');
  for (const [id, weight] of [[1, 4], [2, 3], [3, 2], [4, 1]] as const) {
    // sd of a share near 0.4 over 40,000 runs is ~0.0025; the bound is eight of those.
    t.ok(Math.abs((first.get(id) ?? 0) / runs - weight / 10) < 0.02, `group ${id} first ${first.get(id)} times of ${runs}, weight ${weight}/10`);
  }
});

t.test('the rest follow by weight after the first: every order as likely as successive weighted draws', async (t) => {
  for (const weights of [[5, 2, 1], [1, 1, 1]]) {
    const random = seeded(3);
    const tier = weights.map((w, i) => candidate(i + 1, 7, w));
    const total = weights.reduce((s, w) => s + w, 0);
    const runs = 60_000;
    const seen = new Map<string, number>();
    for (let run = 0; run < runs; run++) {
      const key = ids(attemptOrder(tier, random)).join(',');
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    for (const [a, b, c] of [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]] as const) {
      const wa = weights[a - 1]!, wb = weights[b - 1]!;
      const expected = (wa / total) * (wb / (total - wa));
      const share = (seen.get(`${a},${b},${c}`) ?? 0) / runs;
      t.ok(Math.abs(share - expected) < 0.015, `weights ${weights}: order ${a},${b},${c} ${share.toFixed(4)}, expected ${expected.toFixed(4)}`);
    }
  }
});

t.test('a weightless candidate comes after those with weight, in the order given', async (t) => {
  const random = seeded(4);
  const tier = [candidate(1, 0, 2), candidate(2, 0, 0), candidate(3, 0, 1), candidate(4, 0, 0)];
  const tails = new Set<string>();
  for (let run = 0; run < 200; run++) tails.add(ids(attemptOrder(tier, random)).slice(2).join(','));
  t.same([...tails], ['2,4']);
});

t.test('1,000 Groups of one priority: the work grows linearly, not with the square', async (t) => {
  for (const mixed of [false, true]) {
    let reads = 0;
    let draws = 0;
    const counted = (id: number, priority: number, weight: number): Candidate => {
      const group = { id };
      Object.defineProperty(group, 'priority', { get: () => (reads++, priority) });
      Object.defineProperty(group, 'weight', { get: () => (reads++, weight) });
      return { group } as unknown as Candidate;
    };
    const n = 1000;
    const given = Array.from({ length: n }, (_, i) => counted(i, 0, mixed ? 1 + (i % 7) : 1));
    const random = seeded(5);
    const order = attemptOrder(given, () => (draws++, random()));
    t.equal(new Set(ids(order)).size, n, 'every Group once');
    // Successive draws over the remaining pool read each weight once per draw: ~n²/2 = 500,000.
    t.ok(reads <= 10 * n, `${reads} reads of priority and weight for ${n} Groups (${mixed ? 'mixed' : 'equal'} weights)`);
    t.ok(draws <= n, `${draws} random draws for ${n} Groups`);
  }
});
