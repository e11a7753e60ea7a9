import type Database from 'better-sqlite3';
import { decodeLogBatch } from './decode-log-batch.ts';
import { RollupTable } from './log-rollup.ts';
import { HOURLY_ROLLUP, LOG_SCHEMA_VERSION } from './log-schema.ts';
import type { LogBatchWriter } from './write-log-batch.ts';

/** Batches read per query, and whose rollups are summed before they are written. */
const CHUNK = 64;

/**
 * Brings a file written under an older LOG_SCHEMA_VERSION up to date: usage_rollup (and with
 * it usage_rollup_hour), log_batch_dims and log_batch_combos are computed again from the stored batches, which they only summarize
 * (prune keeps them equal), and the version is set, in one transaction, so that a crash part
 * way leaves the old state and the next open starts over.
 */
export function rebuildDerivedTables(db: Database.Database, writer: LogBatchWriter, onNotice: (message: string) => void = () => {}): void {
  if ((db.pragma('user_version', { simple: true }) as number) >= LOG_SCHEMA_VERSION) return;
  // Seconds per million records, before the server listens: say why the start waits.
  const count = (db.prepare('SELECT COUNT(*) AS n FROM log_batches').get() as { n: number }).n;
  if (count > 0) onNotice(`rebuilding request-log usage tables (${count} batches), once after an upgrade`);
  const batches = db.prepare(`SELECT id, data FROM log_batches WHERE id > ? ORDER BY id LIMIT ${CHUNK}`);
  db.transaction(() => {
    db.exec(`DELETE FROM usage_rollup; DELETE FROM ${HOURLY_ROLLUP}; DELETE FROM log_batch_dims; DELETE FROM log_batch_combos`);
    let after = 0;
    for (;;) {
      const rows = batches.all(after) as Array<{ id: number; data: Buffer }>;
      const rollup = new RollupTable();
      for (const { id, data } of rows) {
        const batch = decodeLogBatch(data);
        writer.insertDims(id, batch);
        rollup.addBatch(batch);
        after = id;
      }
      writer.applyRollup(rollup.rows, 1);
      if (rows.length < CHUNK) break;
    }
    db.pragma(`user_version = ${LOG_SCHEMA_VERSION}`);
  })();
}
