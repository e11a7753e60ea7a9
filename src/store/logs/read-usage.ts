import type { PrepareStatement } from './prepared-statements.ts';
import type { LogBatchSource } from './log-batch-source.ts';
import { refString } from './decode-log-batch.ts';
import { ROLLUP_SUM_COLUMNS, addRecord, addSums, emptySums, usageTotalsOf, type RollupSums } from './log-rollup.ts';
import type { UsageDimension, UsageQuery, UsageRow } from './log-store.ts';
import { compareSqlValues } from './sql-order.ts';
import { wellFormedFilter } from './well-formed-text.ts';
import { DAY_MS, HOUR_MS, splitBySlots } from './time-slots.ts';
import { cutHours, rollupRows, type RollupFilter } from './rollup-ranges.ts';

type DimensionName = 'access_key_id' | 'group_id' | 'model';
type Dimensions = Record<DimensionName, string | number | null>;

const DIMENSION: Readonly<Record<UsageDimension, { column: string; as: DimensionName }>> = {
  key: { column: 'access_key_id', as: 'access_key_id' },
  group: { column: 'group_id', as: 'group_id' },
  model: { column: 'external_model', as: 'model' },
};

/**
 * Usage per bucket and requested dimensions: the rollups of the whole minutes inside
 * [from, to) (per hour where a bucket holds the whole hour: rollup-ranges.ts), plus the
 * records of the minutes cut by `from` or `to`, summed per row.
 * With `max_rows`, collecting stops at `max_rows + 1` rows (which ones is unspecified), so that
 * a range × bucket × group_by of millions of rows is never built in memory.
 */
export function readUsage(prepare: PrepareStatement, source: LogBatchSource, given: UsageQuery): UsageRow[] {
  const query = wellFormedFilter(given);
  const size = query.bucket === 'hour' ? HOUR_MS : DAY_MS;
  const offset = Math.trunc(query.utc_offset_minutes ?? 0) * 60_000;
  const dimensions = [...new Set(query.group_by)].map((d) => DIMENSION[d]);
  const limit = query.max_rows === undefined ? -1 : Math.max(0, Math.trunc(query.max_rows)) + 1;
  const rows = new Map<string, { bucket_start: number; values: Dimensions; sums: RollupSums }>();
  const sumsOf = (bucket_start: number, values: Dimensions): RollupSums => {
    const id = JSON.stringify([bucket_start, ...dimensions.map((d) => values[d.as])]);
    let row = rows.get(id);
    if (row === undefined) rows.set(id, (row = { bucket_start, values, sums: emptySums() }));
    return row.sums;
  };
  const { whole, partial } = splitBySlots(query.from, query.to);
  if (whole !== undefined) {
    const filter: RollupFilter = { sql: '', params: [] };
    for (const [column, value] of [['access_key_id', query.access_key_id], ['group_id', query.group_id], ['external_model', query.model]] as const) {
      if (value === undefined) continue;
      filter.sql += `${filter.sql === '' ? '' : ' AND '}${column} = ?`;
      filter.params.push(value);
    }
    const rollup = rollupRows(prepare, whole, filter, cutHours(size, offset));
    const groupBy = ['bucket_start', ...dimensions.map((d) => d.as)].join(', ');
    const sums = prepare(
      `SELECT CAST((slot_start + ?) / ? AS INTEGER) * ? - ? AS bucket_start${dimensions.map((d) => `, ${d.column} AS ${d.as}`).join('')},
        ${ROLLUP_SUM_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
       FROM (${rollup.sql}) GROUP BY ${groupBy} LIMIT ?`,
    ).all(offset, size, size, offset, ...rollup.params, limit) as Array<RollupSums & { bucket_start: number } & Dimensions>;
    for (const sum of sums) addSums(sumsOf(sum.bucket_start, sum), sum);
  }
  for (const range of partial) {
    const filter = { ...range, access_key_id: query.access_key_id, group_id: query.group_id, model: query.model };
    source.forEachRecord(filter, (batch, i) => {
      if (limit >= 0 && rows.size >= limit) return;
      const key = batch.accessKeyId[i]!;
      const values = { access_key_id: Number.isNaN(key) ? null : key, group_id: refString(batch, batch.groupRef[i]!), model: refString(batch, batch.modelRef[i]!) };
      addRecord(sumsOf(Math.floor((batch.createdAt[i]! + offset) / size) * size - offset, values), batch, i);
    });
  }
  return [...rows.values()]
    .sort((a, b) => {
      if (a.bucket_start !== b.bucket_start) return a.bucket_start - b.bucket_start;
      for (const d of dimensions) {
        const order = compareSqlValues(a.values[d.as], b.values[d.as]);
        if (order !== 0) return order;
      }
      return 0;
    })
    .map(({ bucket_start, values, sums }) => {
      const row: UsageRow = { bucket_start, ...usageTotalsOf(sums) };
      for (const d of dimensions) (row as unknown as Record<string, unknown>)[d.as] = values[d.as];
      return row;
    });
}
