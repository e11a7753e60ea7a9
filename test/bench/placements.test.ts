import t from 'tap';
import { PLACEMENTS, cpuList, type BenchRole } from '../../bench/placements.ts';

const ROLES: BenchRole[] = ['driver', 'proxy', 'upstream'];

t.test('the scheduler placement leaves every process on every CPU', async (t) => {
  const scheduler = PLACEMENTS.find((p) => p.cpuOf === undefined)!;
  for (const role of ROLES) t.equal(cpuList(scheduler, role, 2), '0-1');
  t.equal(cpuList(scheduler, 'proxy', 8), '0-7');
  t.equal(cpuList(scheduler, 'proxy', 1), '0');
});

t.test('each pinned placement puts exactly two of the three processes on one CPU, a different pair each', async (t) => {
  const pinned = PLACEMENTS.filter((p) => p.cpuOf !== undefined);
  t.equal(pinned.length, 3);
  const pairs = pinned.map((p) => {
    const lists = ROLES.map((role) => cpuList(p, role, 2));
    t.same([...new Set(lists)].sort(), ['0', '1'], `${p.name} uses both CPUs`);
    const shared = ROLES.filter((role, i) => lists.filter((l) => l === lists[i]).length === 2);
    t.equal(shared.length, 2, `${p.name}: two processes share a CPU`);
    t.ok(shared.every((role) => p.name.split(' | ')[0]!.split('+').includes(role)), `${p.name} names the pair that shares`);
    return shared.join('+');
  });
  t.equal(new Set(pairs).size, 3, 'no pair twice');
});

t.test('a placement that needs a CPU the machine lacks is refused', async (t) => {
  const pinned = PLACEMENTS.find((p) => p.cpuOf !== undefined && p.cpuOf.proxy === 1)!;
  t.throws(() => cpuList(pinned, 'proxy', 1), /needs CPU 1; this machine has 1/);
  t.equal(cpuList(pinned, 'driver', 1), '0');
});
