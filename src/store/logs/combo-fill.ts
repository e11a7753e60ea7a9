import type Database from 'better-sqlite3';
import { decodeLogBatch } from './decode-log-batch.ts';
import type { LogBatchWriter } from './write-log-batch.ts';

/** Batches read, and their blooms written, per transaction. */
const CHUNK = 64;

/**
 * Gives every batch stored without a bloom (a file from before log_batch_combos, or batches an
 * older version wrote after it) its bloom, at open, and drops the blooms of batches an older
 * version deleted (it prunes without knowing the table). The blobs are read and decoded once,
 * before the server listens (0.4 to 0.75 s per million records here), a chunk per transaction:
 * a crash part way keeps what was filled, and reads read a batch without a bloom meanwhile.
 */
export function fillComboBlooms(db: Database.Database, writer: LogBatchWriter, onNotice: (message: string) => void = () => {}): void {
  // Read first: an open with nothing to mend writes nothing.
  const orphaned = 'FROM log_batch_combos WHERE batch_id NOT IN (SELECT id FROM log_batches)';
  if (db.prepare(`SELECT 1 ${orphaned} LIMIT 1`).get() !== undefined) db.prepare(`DELETE ${orphaned}`).run();
  const { missing } = db.prepare('SELECT COUNT(*) AS missing FROM log_batches b WHERE NOT EXISTS (SELECT 1 FROM log_batch_combos c WHERE c.batch_id = b.id)').get() as { missing: number };
  if (missing === 0) return;
  onNotice(`indexing request-log batches for filters on several dimensions (${missing} batches), once after an upgrade`);
  const unfilled = db.prepare(
    `SELECT id, data FROM log_batches b WHERE id > ? AND NOT EXISTS (SELECT 1 FROM log_batch_combos c WHERE c.batch_id = b.id) ORDER BY id LIMIT ${CHUNK}`,
  );
  const fill = db.transaction((after: number) => {
    const rows = unfilled.all(after) as Array<{ id: number; data: Buffer }>;
    for (const { id, data } of rows) writer.insertCombos(id, decodeLogBatch(data));
    return rows.length < CHUNK ? undefined : rows[rows.length - 1]!.id;
  });
  for (let after: number | undefined = 0; after !== undefined; ) after = fill(after);
}
