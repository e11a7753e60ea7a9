import type { PrepareStatement } from './prepared-statements.ts';
import { ROLLUP_SUM_COLUMNS } from './log-rollup.ts';
import { DAY_MS, EARLIEST, HOUR_MS, LATEST, type TimeRange } from './time-slots.ts';
import { hasTable } from './has-table.ts';
import { HOURLY_ROLLUP } from './log-schema.ts';

/** The columns both rollup tables have, in this order. */
const COLUMNS = ['slot_start', 'access_key_id', 'group_id', 'external_model', ...ROLLUP_SUM_COLUMNS].join(', ');

/**
 * Which UTC hours hold a bucket boundary strictly inside them, for buckets of `size` ms shifted
 * by `offset` ms: none (undefined), every hour ('all': hour buckets off the hour), or the one
 * hour a day that starts `phase` ms into the UTC day (day buckets off the hour, such as UTC+5:30).
 */
export type CutHours = undefined | 'all' | { phase: number };

export function cutHours(size: number, offset: number): CutHours {
  const boundary = mod(-offset, size);
  if (boundary % HOUR_MS === 0) return undefined;
  if (size === HOUR_MS) return 'all';
  return { phase: boundary - (boundary % HOUR_MS) };
}

/** Conditions on the rollups' dimensions, as SQL (`column = ?` joined by AND, or empty) and its parameters. */
export interface RollupFilter {
  sql: string;
  params: Array<string | number>;
}

/**
 * A SELECT of the rollup rows (slot_start, the three dimensions, the sums) whose sums add up to
 * those of the whole minutes `whole` (minutes, not records: `whole` starts and ends on a minute
 * or is open): the whole UTC hours inside it that `cut` leaves entire from usage_rollup_hour,
 * and the minutes of the rest (its ends, and the cut hours) from usage_rollup. Summing the
 * rows per bucket of the minute table then gives what summing minutes alone gave, since an
 * hour row is only used where all its minutes fall in one bucket. A file without the hourly
 * table (opened read-only, written by an older version) is read by minutes alone.
 */
export function rollupRows(prepare: PrepareStatement, whole: TimeRange, filter: RollupFilter, cut: CutHours = undefined): { sql: string; params: Array<string | number> } {
  const where = filter.sql === '' ? '' : ` AND ${filter.sql}`;
  const minutes = (range: TimeRange) => ({
    sql: `SELECT ${COLUMNS} FROM usage_rollup WHERE slot_start >= ? AND slot_start < ?${where}`,
    params: [range.from, range.to, ...filter.params],
  });
  const hours = cut === 'all' || !hasTable(prepare, HOURLY_ROLLUP) ? undefined : wholeHours(whole);
  if (hours === undefined || cut === 'all') return minutes(whole);
  const parts = [
    {
      sql: `SELECT ${COLUMNS} FROM usage_rollup_hour WHERE slot_start >= ? AND slot_start < ?${where}${cut === undefined ? '' : ` AND (slot_start - ?) % ${DAY_MS} != 0`}`,
      params: [hours.from, hours.to, ...filter.params, ...(cut === undefined ? [] : [cut.phase])],
    },
  ];
  if (whole.from < hours.from) parts.push(minutes({ from: whole.from, to: hours.from }));
  if (hours.to < whole.to) parts.push(minutes({ from: hours.to, to: whole.to }));
  let prefix = { sql: '', params: [] as Array<string | number> };
  if (cut !== undefined) {
    // The cut hours' minutes, found through the slot index one hour at a time (a condition on
    // every minute of the range would read them all), between the oldest and newest hour stored.
    const stored = prepare(
      'SELECT (SELECT MIN(slot_start) FROM usage_rollup_hour) AS oldest, (SELECT MAX(slot_start) FROM usage_rollup_hour) AS newest',
    ).get() as { oldest: number | null; newest: number | null };
    if (stored.oldest !== null && stored.newest !== null) {
      const low = Math.max(hours.from, stored.oldest);
      const first = low + mod(cut.phase - low, DAY_MS);
      const end = Math.min(hours.to, stored.newest + HOUR_MS);
      if (first < end) {
        prefix = {
          sql: `WITH RECURSIVE cut_hours(hour) AS (SELECT ? UNION ALL SELECT hour + ${DAY_MS} FROM cut_hours WHERE hour + ${DAY_MS} < ?) `,
          params: [first, end],
        };
        parts.push({
          sql: `SELECT ${COLUMNS.split(', ').map((c) => `m.${c}`).join(', ')} FROM cut_hours CROSS JOIN usage_rollup m
            WHERE m.slot_start >= cut_hours.hour AND m.slot_start < cut_hours.hour + ${HOUR_MS}${where}`,
          params: [...filter.params],
        });
      }
    }
  }
  return { sql: prefix.sql + parts.map((p) => p.sql).join(' UNION ALL '), params: [...prefix.params, ...parts.flatMap((p) => p.params)] };
}

/** The UTC hours wholly inside `whole` (an open end stays open), or undefined when there is none. */
function wholeHours(whole: TimeRange): TimeRange | undefined {
  const from = whole.from === EARLIEST ? EARLIEST : Math.ceil(whole.from / HOUR_MS) * HOUR_MS;
  const to = whole.to === LATEST ? LATEST : Math.floor(whole.to / HOUR_MS) * HOUR_MS;
  return from < to ? { from, to } : undefined;
}

function mod(a: number, m: number): number {
  return ((a % m) + m) % m;
}
