import type { PrepareStatement } from './prepared-statements.ts';
import type { LogBatchSource } from './log-batch-source.ts';
import type { KeyUsage } from './log-store.ts';
import { EARLIEST, LATEST, splitBySlots } from './time-slots.ts';
import { rollupRows } from './rollup-ranges.ts';
import { withRoundedCost } from '../../usage/index.ts';

/**
 * What an AccessKey used in [from, to): the rollups of the whole minutes in it (per hour for
 * its whole hours: rollup-ranges.ts), the records of a minute cut by `from` or `to` (which
 * quota periods never do) read themselves, plus what retention deleted, kept per hour.
 */
export function readKeyUsage(prepare: PrepareStatement, source: LogBatchSource, accessKeyId: number, from: number | undefined, to: number | undefined): KeyUsage {
  const usage: KeyUsage = { requests: 0, tokens: 0, cost: 0 };
  const { whole, partial } = splitBySlots(from, to);
  if (whole !== undefined) {
    const rollup = rollupRows(prepare, whole, { sql: 'access_key_id = ?', params: [accessKeyId] });
    const logged = prepare(
      `SELECT COALESCE(SUM(forwarded), 0) AS requests, COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens, COALESCE(SUM(cost), 0) AS cost
       FROM (${rollup.sql})`,
    ).get(...rollup.params) as KeyUsage;
    add(usage, logged);
  }
  for (const range of partial) {
    source.forEachRecord({ ...range, access_key_id: accessKeyId }, (batch, i) => {
      if (batch.attemptCount[i]! > 0) usage.requests++;
      usage.tokens += batch.inputTokens[i]! + batch.outputTokens[i]!;
      usage.cost += batch.cost[i]!;
    });
  }
  const pruned = prepare(
    'SELECT COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(tokens), 0) AS tokens, COALESCE(SUM(cost), 0) AS cost FROM pruned_usage_by_hour WHERE access_key_id = ? AND hour_start >= ? AND hour_start < ?',
  ).get(accessKeyId, from ?? EARLIEST, to ?? LATEST) as KeyUsage;
  add(usage, pruned);
  // SQL's SUM and the additions above carry float noise; costs are whole 1e-10 USD.
  return withRoundedCost(usage);
}

function add(usage: KeyUsage, more: KeyUsage): void {
  usage.requests += more.requests;
  usage.tokens += more.tokens;
  usage.cost += more.cost;
}
