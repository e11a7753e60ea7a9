import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteLogStore, type LogStore } from '../../src/store/logs/index.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { roundCost } from '../../src/usage/index.ts';
import { logRecord } from '../management/support/log-records.ts';

// Costs are whole 1e-10 USD, and so must be every sum the management plane reports and a cost
// quota compares: the data plane's meter rounds at each record, so a float sum of a hundred
// thousand costs, a few 1e-10 off, would say "not reached" of a limit the meter refuses at.

const HOUR = 3_600_000;
const BASE = Date.parse('2026-03-02T09:00:00.000Z');
const COSTS = [1.2345678901, 0.3333333333, 0.0000107];
const COUNT = 100_000;

/** COUNT records of key 1 over one hour; the exact sum of the costs of those before `before`, and of all. */
async function fill(logs: LogStore, before: number): Promise<{ all: number; early: number }> {
  let all = 0n;
  let early = 0n;
  for (let i = 0; i < COUNT; i++) {
    const cost = COSTS[i % COSTS.length]!;
    const created_at = BASE + Math.floor((i * HOUR) / COUNT);
    all += BigInt(Math.round(cost * 1e10));
    if (created_at < before) early += BigInt(Math.round(cost * 1e10));
    logs.append(logRecord({ request_id: `c${i}`, created_at, cost }));
    // Bounded batches in flight, so that the writer drops none.
    if (i % 5000 === 4999) await logs.flush();
  }
  await logs.flush();
  return { all: Number(all) / 1e10, early: Number(early) / 1e10 };
}

const STORES: Array<[string, (t: Test) => LogStore]> = [
  [
    'SQLite',
    (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-cost-sums-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      return openSqliteLogStore(dir);
    },
  ],
  ['memory', () => new MemoryLogStore()],
];

for (const [name, open] of STORES) {
  t.test(`${name}: usage, statistics and a key's quota usage are the exact sum of 100 000 costs`, async (t) => {
    const logs = open(t);
    t.teardown(() => logs.close());
    const half = BASE + HOUR / 2;
    const sums = await fill(logs, half);
    t.equal((await logs.keyUsage(1)).cost, sums.all, 'the quota usage');
    for (const bucket of ['hour', 'day'] as const) {
      const rows = await logs.usage({ bucket, group_by: ['key'] });
      t.equal(rows.length, 1);
      t.equal(roundCost(rows[0]!.cost), sums.all, `/api/usage by ${bucket}`);
    }
    t.equal(roundCost((await logs.statistics({})).cost), sums.all, 'the statistics');
    // Pruned records stay in the quota usage, per key and hour.
    await logs.prune(half);
    await logs.flush();
    t.equal((await logs.keyUsage(1)).cost, sums.all, 'the quota usage after a prune');
    t.equal(roundCost((await logs.statistics({})).cost), roundCost(sums.all - sums.early), 'the statistics after a prune');
  });
}
