import { emptyUsage, type TokenUsage } from './token-usage.ts';
import type { UsageFieldTable } from './usage-field-table.ts';
import { readCount } from './read-path.ts';

/** Raw counters of one usage object, keyed by the table's raw path. */
export type RawUsageCounters = Map<string, number>;

export function readRawCounters(table: UsageFieldTable, usageObject: unknown): RawUsageCounters {
  const counters: RawUsageCounters = new Map();
  for (const row of table.fields) {
    const count = readCount(usageObject, row.raw);
    if (count !== undefined) counters.set(row.raw, count);
  }
  return counters;
}

export function unifyCounters(table: UsageFieldTable, counters: RawUsageCounters): TokenUsage {
  const usage = emptyUsage();
  for (const row of table.fields) usage[row.unified] += counters.get(row.raw) ?? 0;
  return usage;
}
