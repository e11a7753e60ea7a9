import type Database from 'better-sqlite3';
import { decodedRecord, type DecodedLogBatch } from './decode-log-batch.ts';
import { FLAG_HAS_BODY, LogBatchEncoder } from './encode-log-batch.ts';
import type { BatchMeta, LogBatchSource } from './log-batch-source.ts';
import { RollupTable, hourOf, roundCostSql, type RollupRow } from './log-rollup.ts';
import { addCost } from '../../usage/index.ts';
import { SUM_MINUTES_INTO_HOURS } from './hourly-rollup.ts';
import { HOURLY_ROLLUP } from './log-schema.ts';
import { HOUR_MS, SLOT_MS, slotOf } from './time-slots.ts';
import type { LogBatchWriter } from './write-log-batch.ts';

/** Records looked at per prune transaction (whole batches, at least one): a few ms of the writer's time. */
const PRUNE_RECORDS = 2048;

/**
 * Deletes the records created before a cutoff, oldest batches first, a few batches per
 * transaction. Each transaction moves what its records used from usage_rollup to
 * pruned_usage_by_hour along with deleting them, so that after any commit (a crash included)
 * the rollups are the sums of the records stored and every deleted record is counted in
 * pruned_usage_by_hour exactly once: keyUsage never changes across a prune. A batch wholly
 * before the cutoff is deleted; one that straddles it is written again with its newer records,
 * which keep their seqs.
 */
export class LogBatchPruner {
  readonly #writer: LogBatchWriter;
  readonly #source: LogBatchSource;
  readonly #oldest: Database.Statement;
  readonly #deleteBatch: Database.Statement;
  readonly #deleteBatchBodies: Database.Statement;
  readonly #deleteBody: Database.Statement;
  readonly #rewriteBatch: Database.Statement;
  readonly #keepKeyUsage: Database.Statement;
  readonly #deleteSlot: Database.Statement;
  readonly #deleteHour: Database.Statement;
  readonly #sumHour: Database.Statement;
  readonly #step: (before: number) => number | undefined;
  readonly #recompute: (slot: number) => void;

  constructor(db: Database.Database, writer: LogBatchWriter, source: LogBatchSource) {
    this.#writer = writer;
    this.#source = source;
    this.#oldest = db.prepare(
      'SELECT id, first_seq, count, min_created_at, max_created_at FROM log_batches WHERE min_created_at < ? ORDER BY min_created_at, id LIMIT 64',
    );
    this.#deleteBatch = db.prepare('DELETE FROM log_batches WHERE id = ?');
    this.#deleteBatchBodies = db.prepare('DELETE FROM request_bodies WHERE batch_id = ?');
    this.#deleteBody = db.prepare('DELETE FROM request_bodies WHERE request_id = ?');
    this.#rewriteBatch = db.prepare('UPDATE log_batches SET count = ?, min_created_at = ?, max_created_at = ?, data = ? WHERE id = ?');
    this.#keepKeyUsage = db.prepare(
      `INSERT INTO pruned_usage_by_hour (access_key_id, hour_start, requests, tokens, cost) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (access_key_id, hour_start) DO UPDATE SET
         requests = requests + excluded.requests, tokens = tokens + excluded.tokens, cost = ${roundCostSql('cost + excluded.cost')}`,
    );
    this.#deleteSlot = db.prepare('DELETE FROM usage_rollup WHERE slot_start = ?');
    this.#deleteHour = db.prepare(`DELETE FROM ${HOURLY_ROLLUP} WHERE slot_start = ?`);
    this.#sumHour = db.prepare(SUM_MINUTES_INTO_HOURS);
    this.#step = db.transaction((before: number) => this.#pruneSome(before));
    this.#recompute = db.transaction((slot: number) => this.#recomputeSlot(slot));
  }

  /**
   * One transaction: prunes the oldest batches that hold records created before `before`.
   * Returns how many records it deleted, or undefined when no batch holds any.
   */
  step(before: number): number | undefined {
    return this.#step(before);
  }

  /**
   * Sets the rollups of the slot that `before` cuts (when it is not on a minute) to the sums of
   * its remaining records: the steps subtracted the deleted ones, which leaves float sums
   * (cost) a rounding error away from a fresh sum. The hour holding that slot is summed again
   * from its minutes.
   */
  finish(before: number): void {
    if (before % SLOT_MS !== 0) this.#recompute(slotOf(before));
  }

  #pruneSome(before: number): number | undefined {
    const metas = this.#oldest.all(before) as BatchMeta[];
    if (metas.length === 0) return undefined;
    let looked = 0;
    let deleted = 0;
    for (const meta of metas) {
      if (looked >= PRUNE_RECORDS) break;
      const batch = this.#source.load(meta);
      this.#source.forget(meta.id);
      if (batch === undefined) continue;
      looked += batch.count;
      deleted += this.#pruneBatch(meta, batch, before);
    }
    return deleted;
  }

  #pruneBatch(meta: BatchMeta, batch: DecodedLogBatch, before: number): number {
    const isOld = (i: number) => batch.createdAt[i]! < before;
    const gone = new RollupTable();
    gone.addBatch(batch, isOld);
    this.#writer.applyRollup(gone.rows, -1);
    this.#keepForQuotas(gone.rows);
    const kept: number[] = [];
    for (let i = 0; i < batch.count; i++) if (!isOld(i)) kept.push(i);
    this.#writer.deleteDims(meta.id);
    if (kept.length === 0) {
      this.#deleteBatchBodies.run(meta.id);
      this.#deleteBatch.run(meta.id);
      return batch.count;
    }
    const encoder = new LogBatchEncoder();
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < batch.count; i++) {
      const hasBody = (batch.flags[i]! & FLAG_HAS_BODY) !== 0;
      if (isOld(i)) {
        if (hasBody) this.#deleteBody.run(decodedRecord(batch, i).request_id);
        continue;
      }
      encoder.appendStored(decodedRecord(batch, i), hasBody);
      min = Math.min(min, batch.createdAt[i]!);
      max = Math.max(max, batch.createdAt[i]!);
    }
    const rewritten = encoder.seal(kept.map((i) => batch.seqOffset[i]!))!;
    this.#rewriteBatch.run(rewritten.count, min, max, rewritten.data, meta.id);
    this.#writer.insertDims(meta.id, this.#source.load({ ...meta, count: rewritten.count }, rewritten.data)!);
    return batch.count - kept.length;
  }

  /** What the deleted records used, per AccessKey and UTC hour. */
  #keepForQuotas(rows: readonly RollupRow[]): void {
    const hours = new Map<string, [keyId: number, hour: number, requests: number, tokens: number, cost: number]>();
    for (const row of rows) {
      if (row.access_key_id === null) continue;
      const hour = hourOf(row.slot_start);
      const id = `${row.access_key_id} ${hour}`;
      const sum = hours.get(id) ?? [row.access_key_id, hour, 0, 0, 0];
      sum[2] += row.forwarded;
      sum[3] += row.input_tokens + row.output_tokens;
      sum[4] = addCost(sum[4], row.cost);
      hours.set(id, sum);
    }
    for (const values of hours.values()) this.#keepKeyUsage.run(...values);
  }

  #recomputeSlot(slot: number): void {
    const end = slot + SLOT_MS;
    const table = new RollupTable();
    for (const meta of this.#source.newestFirst({ from: slot, to: end })) {
      const batch = this.#source.load(meta);
      if (batch !== undefined) table.addBatch(batch, (i) => batch.createdAt[i]! >= slot && batch.createdAt[i]! < end);
    }
    this.#deleteSlot.run(slot);
    this.#writer.applyRollup(table.rows, 1);
    // applyRollup added the slot's sums to its hour again, over what the slot had before.
    const hour = hourOf(slot);
    this.#deleteHour.run(hour);
    this.#sumHour.run(hour, hour + HOUR_MS);
  }
}
