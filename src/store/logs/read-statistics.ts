import type { PrepareStatement } from './prepared-statements.ts';
import type { LogBatchSource } from './log-batch-source.ts';
import { refString } from './decode-log-batch.ts';
import { ROLLUP_SUM_COLUMNS, addRecord, addSums, emptySums, usageTotalsOf, type RollupSums } from './log-rollup.ts';
import type { ModelStatistics, Statistics, StatisticsQuery } from './log-store.ts';
import { compareSqlValues } from './sql-order.ts';
import { splitBySlots } from './time-slots.ts';
import { rollupRows, type RollupFilter } from './rollup-ranges.ts';

/**
 * Totals and top models: per external model, the rollups of the whole minutes inside
 * [from, to) (per hour for its whole hours: rollup-ranges.ts) plus the records of the minutes cut by `from` or `to`; the totals are their sum.
 */
export function readStatistics(prepare: PrepareStatement, source: LogBatchSource, query: StatisticsQuery): Statistics {
  const byModel = new Map<string | null, RollupSums>();
  const sumsOf = (model: string | null): RollupSums => {
    let sums = byModel.get(model);
    if (sums === undefined) byModel.set(model, (sums = emptySums()));
    return sums;
  };
  const { whole, partial } = splitBySlots(query.from, query.to);
  if (whole !== undefined) {
    const filter: RollupFilter = query.access_key_id === undefined ? { sql: '', params: [] } : { sql: 'access_key_id = ?', params: [query.access_key_id] };
    const rollup = rollupRows(prepare, whole, filter);
    const rows = prepare(
      `SELECT external_model AS model, ${ROLLUP_SUM_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
       FROM (${rollup.sql}) GROUP BY external_model`,
    ).all(...rollup.params) as Array<RollupSums & { model: string | null }>;
    for (const { model, ...sums } of rows) addSums(sumsOf(model), sums);
  }
  for (const range of partial) {
    source.forEachRecord({ ...range, access_key_id: query.access_key_id }, (batch, i) => {
      addRecord(sumsOf(refString(batch, batch.modelRef[i]!)), batch, i);
    });
  }
  const total = emptySums();
  for (const sums of byModel.values()) addSums(total, sums);
  const top_models: ModelStatistics[] = [...byModel]
    .map(([model, sums]) => ({ model, ...usageTotalsOf(sums) }))
    .sort((a, b) => b.requests - a.requests || compareSqlValues(a.model, b.model))
    .slice(0, Math.max(1, Math.trunc(query.top ?? 5)));
  return {
    ...usageTotalsOf(total),
    error_rate: total.requests === 0 ? 0 : total.errors / total.requests,
    client_aborted: total.client_aborted,
    avg_duration_ms: total.requests === 0 ? 0 : total.duration_sum / total.requests,
    avg_ttfb_ms: total.ttfb_count === 0 ? 0 : total.ttfb_sum / total.ttfb_count,
    by_status_class: { '1xx': total.s1xx, '2xx': total.s2xx, '3xx': total.s3xx, '4xx': total.s4xx, '5xx': total.s5xx },
    top_models,
  };
}
