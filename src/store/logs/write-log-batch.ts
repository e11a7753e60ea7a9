import type Database from 'better-sqlite3';
import type { BodyRowValues } from './body-row.ts';
import { comboBloom } from './combo-bloom.ts';
import { decodeLogBatch, refString, type DecodedLogBatch } from './decode-log-batch.ts';
import { DIM_ERROR_CODE, DIM_GROUP, DIM_KEY, DIM_MODEL, DIM_STATUS, HOURLY_ROLLUP } from './log-schema.ts';
import { RollupTable, hourRows, type RollupRow } from './log-rollup.ts';
import { RollupUpserts } from './rollup-upserts.ts';
import { StoredObjectsTable } from './stored-objects-table.ts';
import type { StoredObjectChange } from '../stored-object-store.ts';

/** A batch ready to store: its encoded records, its recorded bodies, and the key that makes storing it again a no-op. */
export interface SealedLogBatch {
  key: string;
  data: Buffer;
  count: number;
  bodies: BodyRowValues[] | undefined;
  /** What it takes in memory: `data`'s length plus its bodies' text length (what the buffering caps count). */
  bytes: number;
  /** Stored-object changes made up to its sealing, written in its transaction; only a close's last batch carries only these (`count` 0). */
  objects?: StoredObjectChange[] | undefined;
}

/**
 * Stores batches: the batch row (skipped, with everything else, when its key is known), its
 * dimensions, its recorded bodies, its records' rollups and its stored-object changes, in one transaction. Also the
 * rollup and dimension updates that prune needs.
 */
export class LogBatchWriter {
  readonly #db: Database.Database;
  readonly #insertBatch: Database.Statement;
  readonly #lastEndSeq: Database.Statement;
  readonly #insertDim: Database.Statement;
  readonly #deleteDims: Database.Statement;
  readonly #insertCombos: Database.Statement;
  readonly #deleteCombos: Database.Statement;
  readonly #insertBody: Database.Statement;
  readonly #minuteRollup: RollupUpserts;
  readonly #hourRollup: RollupUpserts;
  readonly storedObjects: StoredObjectsTable;
  readonly #write: (batch: SealedLogBatch, seqs: { first: number; end: number } | undefined) => boolean;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insertBatch = db.prepare(
      `INSERT OR IGNORE INTO log_batches (batch_key, first_seq, end_seq, count, min_created_at, max_created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    // Seqs grow with ids: a batch's first_seq is where the newest batch's seqs ended.
    this.#lastEndSeq = db.prepare('SELECT end_seq FROM log_batches ORDER BY id DESC LIMIT 1').pluck();
    this.#insertDim = db.prepare('INSERT OR IGNORE INTO log_batch_dims (kind, value, batch_id) VALUES (?, ?, ?)');
    this.#deleteDims = db.prepare('DELETE FROM log_batch_dims WHERE batch_id = ?');
    this.#insertCombos = db.prepare('INSERT OR REPLACE INTO log_batch_combos (batch_id, bloom) VALUES (?, ?)');
    this.#deleteCombos = db.prepare('DELETE FROM log_batch_combos WHERE batch_id = ?');
    this.#insertBody = db.prepare(
      'INSERT OR IGNORE INTO request_bodies (request_id, state, original_bytes, body, is_json, batch_id) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#minuteRollup = new RollupUpserts(db, 'usage_rollup');
    this.#hourRollup = new RollupUpserts(db, HOURLY_ROLLUP);
    this.storedObjects = new StoredObjectsTable(db);
    this.#write = db.transaction((batch: SealedLogBatch, seqs: { first: number; end: number } | undefined) => this.#store(batch, seqs));
  }

  /**
   * Stores a batch in one transaction (a savepoint inside a caller's); false when a batch with
   * its key is already stored. `seqs` keeps the seqs of records migrated from request_logs.
   */
  write(batch: SealedLogBatch, seqs?: { first: number; end: number }): boolean {
    return this.#write(batch, seqs);
  }

  /** The batch's distinct keys, groups, models, statuses and error codes, and the bloom of their combinations. */
  insertDims(batchId: number, batch: DecodedLogBatch): void {
    const { keys, groups, models, statuses, errorCodes } = distinctValues(batch);
    for (const key of keys) this.#insertDim.run(DIM_KEY, key, batchId);
    for (const ref of groups) this.#insertDim.run(DIM_GROUP, refString(batch, ref), batchId);
    for (const ref of models) this.#insertDim.run(DIM_MODEL, refString(batch, ref), batchId);
    for (const status of statuses) this.#insertDim.run(DIM_STATUS, status, batchId);
    for (const ref of errorCodes) this.#insertDim.run(DIM_ERROR_CODE, refString(batch, ref), batchId);
    this.#insertCombos.run(batchId, comboBloom(batch, [keys.size, groups.size, models.size, statuses.size, errorCodes.size]));
  }

  /** The bloom of a batch stored without one (combo-fill.ts), sized as insertDims sizes it. */
  insertCombos(batchId: number, batch: DecodedLogBatch): void {
    const { keys, groups, models, statuses, errorCodes } = distinctValues(batch);
    this.#insertCombos.run(batchId, comboBloom(batch, [keys.size, groups.size, models.size, statuses.size, errorCodes.size]));
  }

  deleteDims(batchId: number): void {
    this.#deleteDims.run(batchId);
    this.#deleteCombos.run(batchId);
  }

  /**
   * Adds minute rows to usage_rollup and their sums per hour to usage_rollup_hour, or with
   * `sign` -1 takes them away (rows left with no request are deleted): every change of the
   * minute rollup goes through here, so the two stay in step.
   */
  applyRollup(rows: readonly RollupRow[], sign: 1 | -1): void {
    this.#minuteRollup.apply(rows, sign);
    this.#hourRollup.apply(hourRows(rows), sign);
  }

  #store(batch: SealedLogBatch, seqs: { first: number; end: number } | undefined): boolean {
    if (batch.count === 0) {
      // No batch row to make a second store a no-op: only a close seals these (LogBatchAppender).
      this.storedObjects.apply(batch.objects ?? []);
      return true;
    }
    const decoded = decodeLogBatch(batch.data);
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < decoded.count; i++) {
      const at = decoded.createdAt[i]!;
      if (at < min) min = at;
      if (at > max) max = at;
    }
    const first = seqs?.first ?? ((this.#lastEndSeq.get() as number | undefined) ?? 0);
    const end = seqs?.end ?? first + decoded.count;
    const inserted = this.#insertBatch.run(batch.key, first, end, decoded.count, min, max, batch.data);
    if (inserted.changes === 0) return false;
    const batchId = Number(inserted.lastInsertRowid);
    this.insertDims(batchId, decoded);
    for (const body of batch.bodies ?? []) this.#insertBody.run(...body, batchId);
    const rollup = new RollupTable();
    rollup.addBatch(decoded);
    this.applyRollup(rollup.rows, 1);
    // Only with its batch: one sent again after it was stored would bring back older states.
    if (batch.objects !== undefined) this.storedObjects.apply(batch.objects);
    return true;
  }
}

/** A batch's distinct values per filterable dimension, missing ones left out (refs for strings). */
function distinctValues(batch: DecodedLogBatch) {
  const keys = new Set<number>();
  const groups = new Set<number>();
  const models = new Set<number>();
  const statuses = new Set<number>();
  const errorCodes = new Set<number>();
  for (let i = 0; i < batch.count; i++) {
    const key = batch.accessKeyId[i]!;
    if (!Number.isNaN(key)) keys.add(key);
    if (batch.groupRef[i]! !== 0) groups.add(batch.groupRef[i]!);
    if (batch.modelRef[i]! !== 0) models.add(batch.modelRef[i]!);
    if (!Number.isNaN(batch.status[i]!)) statuses.add(batch.status[i]!);
    if (batch.errorCodeRef[i]! !== 0) errorCodes.add(batch.errorCodeRef[i]!);
  }
  return { keys, groups, models, statuses, errorCodes };
}
