import type Database from 'better-sqlite3';
import { ROLLUP_SUM_COLUMNS, roundCostSql } from './log-rollup.ts';
import { HOURLY_ROLLUP, rollupTableSchema } from './log-schema.ts';
import { EARLIEST, HOUR_MS, LATEST } from './time-slots.ts';

/** Sums the usage_rollup minutes in [?, ?) into new usage_rollup_hour rows, per UTC hour and combination of dimensions. */
export const SUM_MINUTES_INTO_HOURS = `INSERT INTO ${HOURLY_ROLLUP} (slot_start, access_key_id, group_id, external_model, ${ROLLUP_SUM_COLUMNS.join(', ')})
  SELECT slot_start - (slot_start % ${HOUR_MS} + ${HOUR_MS}) % ${HOUR_MS} AS hour, access_key_id, group_id, external_model,
    ${ROLLUP_SUM_COLUMNS.map((c) => (c === 'cost' ? roundCostSql('SUM(cost)') : `SUM(${c})`)).join(', ')}
  FROM usage_rollup WHERE slot_start >= ? AND slot_start < ? GROUP BY hour, access_key_id, group_id, external_model`;

/**
 * Gives a file from before the hourly rollup its table, summed from usage_rollup, in one
 * transaction with its creation (a crash part way leaves the file without it, and the next open
 * starts over); runs before the schema, which would create it empty. Before the server listens
 * (1.3 to 1.9 s per million minute rows here), so a file with rows says so first.
 */
export function addHourlyRollup(db: Database.Database, onNotice: (message: string) => void = () => {}): void {
  const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
  if (!tables.has('usage_rollup') || tables.has(HOURLY_ROLLUP)) return;
  const rows = db.prepare('SELECT COUNT(*) FROM usage_rollup').pluck().get() as number;
  if (rows > 0) onNotice(`summing request-log usage per hour (${rows} minute rows), once after an upgrade`);
  db.transaction(() => {
    db.exec(rollupTableSchema(HOURLY_ROLLUP));
    db.prepare(SUM_MINUTES_INTO_HOURS).run(EARLIEST, LATEST);
  })();
}
