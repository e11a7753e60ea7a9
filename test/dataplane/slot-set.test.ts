import t from 'tap';
import { SlotSet } from '../../src/streaming/slot-set.ts';
import { seeded } from '../helpers/seeded-random.ts';

interface Member {
  slot: number;
  id: number;
}

t.test('a SlotSet keeps what a Set keeps, in the same order, through adds and deletes', async (t) => {
  const next = seeded(7);
  for (let trial = 0; trial < 50; trial++) {
    const set = new Set<Member>();
    const slots = new SlotSet<Member>();
    const pool: Member[] = Array.from({ length: 60 }, (_, id) => ({ slot: -1, id }));
    for (let op = 0; op < 2000; op++) {
      const member = pool[Math.floor(next() * pool.length)]!;
      if (next() < 0.5) {
        set.add(member);
        slots.add(member);
      } else {
        set.delete(member);
        slots.delete(member);
      }
      const inSlots: number[] = [];
      slots.forEach((m) => inSlots.push(m.id));
      if (inSlots.join() !== [...set].map((m) => m.id).join() || slots.size !== set.size) {
        t.fail(`trial ${trial}, operation ${op}: ${inSlots.join()} against ${[...set].map((m) => m.id).join()}`);
        return;
      }
    }
  }
  t.pass('the same members, in the same order, after every operation');
});

t.test('forEach visits members added meanwhile and skips those deleted meanwhile, as a Set does', async (t) => {
  const pool: Member[] = Array.from({ length: 6 }, (_, id) => ({ slot: -1, id }));
  const set = new Set<Member>(pool.slice(0, 4));
  const slots = new SlotSet<Member>();
  for (const member of pool.slice(0, 4)) slots.add(member);
  const visit = (add: (m: Member) => void, remove: (m: Member) => void, seen: number[]) => (member: Member) => {
    seen.push(member.id);
    if (member.id === 0) {
      remove(pool[2]!);
      add(pool[4]!);
    }
    if (member.id === 1) remove(pool[0]!);
    if (member.id === 4) add(pool[2]!);
  };
  const fromSet: number[] = [];
  set.forEach(visit((m) => set.add(m), (m) => set.delete(m), fromSet));
  const fromSlots: number[] = [];
  slots.forEach(visit((m) => slots.add(m), (m) => slots.delete(m), fromSlots));
  t.same(fromSlots, fromSet);
  t.same(fromSlots, [0, 1, 3, 4, 2]);
  const after: number[] = [];
  slots.forEach((m) => after.push(m.id));
  t.same(after, [...set].map((m) => m.id));
  t.equal(slots.size, set.size);
});

t.test('deletes during forEach that leave most slots empty still visit every member left, in order', async (t) => {
  const pool: Member[] = Array.from({ length: 40 }, (_, id) => ({ slot: -1, id }));
  const set = new Set<Member>(pool);
  const slots = new SlotSet<Member>();
  for (const member of pool) slots.add(member);
  const visit = (remove: (m: Member) => void, seen: number[]) => (member: Member) => {
    seen.push(member.id);
    // At the fifth member, every earlier one and most later ones go.
    if (member.id === 4) for (const other of pool) if (other.id < 4 || (other.id > 4 && other.id % 5 !== 0)) remove(other);
  };
  const fromSet: number[] = [];
  set.forEach(visit((m) => set.delete(m), fromSet));
  const fromSlots: number[] = [];
  slots.forEach(visit((m) => slots.delete(m), fromSlots));
  t.same(fromSlots, fromSet);
  const after: number[] = [];
  slots.forEach((m) => after.push(m.id));
  t.same(after, [...set].map((m) => m.id));
});
