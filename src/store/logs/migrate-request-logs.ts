import type Database from 'better-sqlite3';
import { LogBatchEncoder } from './encode-log-batch.ts';
import type { AttemptRecord, LogListItem } from './log-record.ts';
import type { LogBatchWriter } from './write-log-batch.ts';

/** Rows moved per transaction: one batch. */
const CHUNK = 1024;

/** A row of the former request_logs table (a column per field), as better-sqlite3 returns it. */
interface RequestLogRow {
  seq: number;
  request_id: string;
  created_at: number;
  access_key_id: number | null;
  group_id: string | null;
  channel: string | null;
  credential_id: string | null;
  protocol: string;
  operation: string;
  route_mode: string | null;
  effective: string | null;
  external_model: string | null;
  upstream_model: string | null;
  status: number;
  error_code: string | null;
  attempt_count: number;
  /** JSON text of AttemptRecord[]. */
  attempts: string;
  client_aborted: number;
  started_at: number;
  ttfb_ms: number | null;
  duration_ms: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost: number;
  has_request_body: number;
}

/** Adds the batch id column to a request_bodies table made before batches; runs before the schema, whose index needs it. */
export function addBodyBatchColumn(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('request_bodies')").pluck().all() as string[];
  if (columns.length > 0 && !columns.includes('batch_id')) db.exec('ALTER TABLE request_bodies ADD COLUMN batch_id INTEGER');
}

/**
 * Moves the rows of a request_logs table (a row per record, from before batches) into
 * batches, oldest seq first, keeping their seqs; then drops the table and its indexes. Each
 * chunk's batch is written and its rows deleted in one transaction, so a crash part way loses
 * and duplicates nothing, and the next open goes on from there.
 */
export function migrateRequestLogs(db: Database.Database, writer: LogBatchWriter): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'request_logs'").get();
  if (exists === undefined) return;
  const oldest = db.prepare(
    `SELECT l.*, EXISTS (SELECT 1 FROM request_bodies b WHERE b.request_id = l.request_id) AS has_request_body
     FROM request_logs l ORDER BY seq LIMIT ${CHUNK}`,
  );
  const claimBodies = db.prepare('UPDATE request_bodies SET batch_id = ? WHERE request_id IN (SELECT request_id FROM request_logs WHERE seq BETWEEN ? AND ?)');
  const batchId = db.prepare('SELECT id FROM log_batches WHERE batch_key = ?').pluck();
  const deleteRows = db.prepare('DELETE FROM request_logs WHERE seq BETWEEN ? AND ?');
  const moveChunk = db.transaction((): boolean => {
    const rows = oldest.all() as RequestLogRow[];
    const first = rows[0];
    const last = rows[rows.length - 1];
    if (first === undefined || last === undefined) return false;
    const encoder = new LogBatchEncoder();
    for (const row of rows) encoder.appendStored(fromRequestLogRow(row), row.has_request_body === 1);
    const { data, count, bytes } = encoder.seal(rows.map((row) => row.seq - first.seq))!;
    const key = `migrated.${first.seq}`;
    writer.write({ key, data, count, bodies: undefined, bytes }, { first: first.seq, end: last.seq + 1 });
    claimBodies.run(batchId.get(key), first.seq, last.seq);
    deleteRows.run(first.seq, last.seq);
    return true;
  });
  while (moveChunk());
  db.transaction(() => {
    db.exec('DROP TABLE request_logs');
    // Bodies whose record was already gone could never be pruned.
    db.exec('DELETE FROM request_bodies WHERE batch_id IS NULL');
  })();
}

function fromRequestLogRow(row: RequestLogRow): Omit<LogListItem, 'has_request_body'> {
  return {
    request_id: row.request_id,
    created_at: row.created_at,
    access_key_id: row.access_key_id,
    group_id: row.group_id,
    channel: row.channel,
    credential_id: row.credential_id,
    protocol: row.protocol,
    operation: row.operation,
    route_mode: row.route_mode as LogListItem['route_mode'],
    effective: row.effective as LogListItem['effective'],
    external_model: row.external_model,
    upstream_model: row.upstream_model,
    status: row.status,
    error_code: row.error_code,
    attempt_count: row.attempt_count,
    attempts: JSON.parse(row.attempts) as AttemptRecord[],
    client_aborted: row.client_aborted === 1,
    timings: { started_at: row.started_at, ttfb_ms: row.ttfb_ms, duration_ms: row.duration_ms },
    usage: {
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      cached_tokens: row.cached_tokens,
      reasoning_tokens: row.reasoning_tokens,
    },
    cost: row.cost,
    currency: 'USD',
  };
}
