import t from 'tap';
import { openLogStore, tokenRecord as log } from './helpers/key-usage-stores.ts';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const FROM = Date.UTC(2026, 5, 10, 10);
const TO = FROM + HOUR;

for (const kind of ['sqlite', 'worker', 'memory'] as const) {
  t.test(`${kind}: keyUsage(id, from, to) counts exactly the records with from <= created_at < to`, async (t) => {
    const logs = await openLogStore(t, kind);
    // Tokens are distinct powers of ten, so a sum names the records it counted.
    logs.append(log(1, FROM - 1, 1));
    logs.append(log(1, FROM, 10));
    logs.append(log(1, FROM + 30 * MINUTE + 7, 100));
    logs.append(log(1, TO - 1, 1000));
    logs.append(log(1, TO, 10_000));
    logs.append(log(1, TO + 5 * HOUR, 100_000));
    logs.append(log(2, FROM + 1, 7));
    t.same(await logs.keyUsage(1, FROM, TO), { requests: 3, tokens: 1110, cost: 0 }, 'the hour: from included, to excluded');
    t.same(await logs.keyUsage(1, FROM), { requests: 5, tokens: 111_110, cost: 0 }, 'no upper bound: from on');
    t.same(await logs.keyUsage(1, undefined, TO), { requests: 4, tokens: 1111, cost: 0 }, 'no lower bound: up to to');
    t.same(await logs.keyUsage(1, FROM + 1, TO - 1), { requests: 1, tokens: 100, cost: 0 }, 'bounds off the minute: the cut minutes are read from the records');
    t.same(await logs.keyUsage(1, FROM + 30 * MINUTE + 7, FROM + 30 * MINUTE + 8), { requests: 1, tokens: 100, cost: 0 }, 'one millisecond');
    t.same(await logs.keyUsage(1, TO, TO), { requests: 0, tokens: 0, cost: 0 }, 'an empty range');
    t.equal(await logs.prune(TO), 5, 'the records before to are deleted, key 2 included');
    t.same(await logs.keyUsage(1, FROM, TO), { requests: 3, tokens: 1110, cost: 0 }, 'the hour again, from the usage retention kept per hour');
    t.same(await logs.keyUsage(1, FROM - HOUR, FROM), { requests: 1, tokens: 1, cost: 0 }, 'the hour before, pruned too');
    t.same(await logs.keyUsage(1, FROM, TO + HOUR), { requests: 4, tokens: 11_110, cost: 0 }, 'pruned hours and kept records together');
    t.equal(await logs.prune(TO + HOUR), 1, 'the record at to is deleted too');
    t.same(await logs.keyUsage(1, FROM, TO), { requests: 3, tokens: 1110, cost: 0 }, 'the hour at to, pruned, is not counted');
    t.same(await logs.keyUsage(1, TO, TO + HOUR), { requests: 1, tokens: 10_000, cost: 0 }, 'it is counted in its own hour');
  });
}
