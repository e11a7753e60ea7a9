import type { PrepareStatement } from './prepared-statements.ts';
import type { LogBatchSource } from './log-batch-source.ts';
import type { UsageDimension, UsageQuery, UsageRow, UsageTotals } from './log-store.ts';
import { compareSqlValues } from './sql-order.ts';
import { DAY_MS, HOUR_MS, splitBySlots } from './time-slots.ts';

type DimensionName = 'access_key_id' | 'group_id' | 'model';

const DIMENSION: Readonly<Record<UsageDimension, { column: string; as: DimensionName }>> = {
  key: { column: 'access_key_id', as: 'access_key_id' },
  group: { column: 'group_id', as: 'group_id' },
  model: { column: 'external_model', as: 'model' },
};

const TOTALS_SQL = `SUM(requests) AS requests, SUM(errors) AS errors, SUM(input_tokens) AS input_tokens,
  SUM(output_tokens) AS output_tokens, SUM(cached_tokens) AS cached_tokens, SUM(reasoning_tokens) AS reasoning_tokens, SUM(cost) AS cost`;

/**
 * Usage per bucket and requested dimensions: the rollups of the whole minutes inside
 * [from, to), plus the records of the minutes cut by `from` or `to`, summed per row.
 */
export function readUsage(prepare: PrepareStatement, source: LogBatchSource, query: UsageQuery): UsageRow[] {
  const size = query.bucket === 'hour' ? HOUR_MS : DAY_MS;
  const offset = Math.trunc(query.utc_offset_minutes ?? 0) * 60_000;
  const dimensions = [...new Set(query.group_by)].map((d) => DIMENSION[d]);
  const rows = new Map<string, UsageRow>();
  const rowFor = (bucket_start: number, values: Record<DimensionName, string | number | null>): UsageRow => {
    const id = JSON.stringify([bucket_start, ...dimensions.map((d) => values[d.as])]);
    let row = rows.get(id);
    if (row === undefined) {
      row = { bucket_start, requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost: 0 };
      for (const d of dimensions) (row as unknown as Record<string, unknown>)[d.as] = values[d.as];
      rows.set(id, row);
    }
    return row;
  };
  const { whole, partial } = splitBySlots(query.from, query.to);
  if (whole !== undefined) {
    const clauses = ['slot_start >= ?', 'slot_start < ?'];
    const params: Array<string | number> = [whole.from, whole.to];
    for (const [column, value] of [['access_key_id', query.access_key_id], ['group_id', query.group_id], ['external_model', query.model]] as const) {
      if (value === undefined) continue;
      clauses.push(`${column} = ?`);
      params.push(value);
    }
    const groupBy = ['bucket_start', ...dimensions.map((d) => d.as)].join(', ');
    const sums = prepare(
      `SELECT CAST((slot_start + ?) / ? AS INTEGER) * ? - ? AS bucket_start${dimensions.map((d) => `, ${d.column} AS ${d.as}`).join('')}, ${TOTALS_SQL}
       FROM usage_rollup WHERE ${clauses.join(' AND ')} GROUP BY ${groupBy}`,
    ).all(offset, size, size, offset, ...params) as Array<UsageTotals & { bucket_start: number } & Record<DimensionName, string | number | null>>;
    for (const sum of sums) add(rowFor(sum.bucket_start, sum), sum);
  }
  for (const range of partial) {
    const filter = { ...range, access_key_id: query.access_key_id, group_id: query.group_id, model: query.model };
    source.forEachRecord(filter, (batch, i) => {
      const at = batch.createdAt[i]!;
      const key = batch.accessKeyId[i]!;
      const row = rowFor(Math.floor((at + offset) / size) * size - offset, {
        access_key_id: Number.isNaN(key) ? null : key,
        group_id: batch.groupRef[i] === 0 ? null : batch.strings[batch.groupRef[i]! - 1]!,
        model: batch.modelRef[i] === 0 ? null : batch.strings[batch.modelRef[i]! - 1]!,
      });
      row.requests++;
      if (batch.status[i]! >= 400) row.errors++;
      row.input_tokens += batch.inputTokens[i]!;
      row.output_tokens += batch.outputTokens[i]!;
      row.cached_tokens += batch.cachedTokens[i]!;
      row.reasoning_tokens += batch.reasoningTokens[i]!;
      row.cost += batch.cost[i]!;
    });
  }
  return [...rows.values()].sort((a, b) => {
    if (a.bucket_start !== b.bucket_start) return a.bucket_start - b.bucket_start;
    for (const d of dimensions) {
      const order = compareSqlValues(a[d.as], b[d.as]);
      if (order !== 0) return order;
    }
    return 0;
  });
}

function add(row: UsageTotals, sums: UsageTotals): void {
  row.requests += sums.requests;
  row.errors += sums.errors;
  row.input_tokens += sums.input_tokens;
  row.output_tokens += sums.output_tokens;
  row.cached_tokens += sums.cached_tokens;
  row.reasoning_tokens += sums.reasoning_tokens;
  row.cost += sums.cost;
}
