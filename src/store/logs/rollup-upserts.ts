import type Database from 'better-sqlite3';
import { ROLLUP_SUM_COLUMNS, roundCostSql, type RollupRow } from './log-rollup.ts';

const SAME_DIMENSIONS = 'slot_start = ? AND access_key_id IS ? AND group_id IS ? AND external_model IS ?';

/** Adds rows to one rollup table (usage_rollup or usage_rollup_hour), or takes them away. */
export class RollupUpserts {
  readonly #add: Database.Statement;
  readonly #insert: Database.Statement;
  readonly #deleteEmpty: Database.Statement;

  constructor(db: Database.Database, table: string) {
    this.#add = db.prepare(`UPDATE ${table} SET ${ROLLUP_SUM_COLUMNS.map((c) => (c === 'cost' ? `cost = ${roundCostSql('cost + ?')}` : `${c} = ${c} + ?`)).join(', ')} WHERE ${SAME_DIMENSIONS}`);
    this.#insert = db.prepare(
      `INSERT INTO ${table} (slot_start, access_key_id, group_id, external_model, ${ROLLUP_SUM_COLUMNS.join(', ')})
       VALUES (${['?', '?', '?', '?', ...ROLLUP_SUM_COLUMNS.map(() => '?')].join(', ')})`,
    );
    this.#deleteEmpty = db.prepare(`DELETE FROM ${table} WHERE ${SAME_DIMENSIONS} AND requests <= 0`);
  }

  /** With `sign` -1 the rows are subtracted, and a row left with no request is deleted. */
  apply(rows: readonly RollupRow[], sign: 1 | -1): void {
    for (const row of rows) {
      const dimensions = [row.slot_start, row.access_key_id, row.group_id, row.external_model];
      const sums = ROLLUP_SUM_COLUMNS.map((c) => sign * row[c]);
      if (this.#add.run(...sums, ...dimensions).changes === 0) {
        if (sign === 1) this.#insert.run(...dimensions, ...sums);
      } else if (sign === -1) {
        this.#deleteEmpty.run(...dimensions);
      }
    }
  }
}
