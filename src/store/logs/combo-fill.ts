import type Database from 'better-sqlite3';
import { decodeLogBatch } from './decode-log-batch.ts';
import type { LogBatchWriter } from './write-log-batch.ts';

/** Batches read, and their blooms written, per transaction. */
const CHUNK = 64;

/**
 * Gives every batch stored without a bloom (a file from before log_batch_combos) its bloom,
 * at open. Every batch written since has its bloom in its own transaction and loses it with
 * itself, so equal counts (read from indexes, not the blobs) mean nothing is missing. The
 * blobs are read and decoded once, before the server listens (0.4 to 0.75 s per million
 * records here), a chunk per transaction: a crash part way keeps what was filled, and reads read a
 * batch without a bloom meanwhile.
 */
export function fillComboBlooms(db: Database.Database, writer: LogBatchWriter, onNotice: (message: string) => void = () => {}): void {
  const counts = db.prepare('SELECT (SELECT COUNT(*) FROM log_batches) AS batches, (SELECT COUNT(*) FROM log_batch_combos) AS blooms').get() as {
    batches: number;
    blooms: number;
  };
  if (counts.blooms >= counts.batches) return;
  onNotice(`indexing request-log batches for filters on several dimensions (${counts.batches - counts.blooms} batches), once after an upgrade`);
  const missing = db.prepare(
    `SELECT id, data FROM log_batches b WHERE id > ? AND NOT EXISTS (SELECT 1 FROM log_batch_combos c WHERE c.batch_id = b.id) ORDER BY id LIMIT ${CHUNK}`,
  );
  const fill = db.transaction((after: number) => {
    const rows = missing.all(after) as Array<{ id: number; data: Buffer }>;
    for (const { id, data } of rows) writer.insertCombos(id, decodeLogBatch(data));
    return rows.length < CHUNK ? undefined : rows[rows.length - 1]!.id;
  });
  for (let after: number | undefined = 0; after !== undefined; ) after = fill(after);
}
