import type Database from 'better-sqlite3';
import { fromBodyRow, type BodyRow } from './body-row.ts';
import { decodedRecord, type DecodedLogBatch } from './decode-log-batch.ts';
import type { BatchMeta, LogBatchSource } from './log-batch-source.ts';
import type { LogRecord } from './log-record.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** Batches searched between yields when every batch is searched. */
const SCAN_CHUNK = 32;

/**
 * A record by request id. The gateway's ids are UUIDv7 whose millisecond is the record's
 * created_at, so only the batches whose created_at range covers it are searched. Any other
 * id (or one not found there) is searched in every batch, newest first, yielding every few
 * batches: slow on a large store, but only ids the gateway did not make, or that it no longer
 * has, take that path. Each blob is searched for the id's bytes before it is decoded.
 */
export async function findLogRecord(
  source: LogBatchSource,
  bodies: Database.Statement,
  requestId: string,
  closed: () => boolean,
): Promise<LogRecord | undefined> {
  const needle = Buffer.from(requestId, 'utf8');
  // The batches around the id's time, searched first, are not searched again by the scan.
  const searchedFirst = new Set<number>();
  if (UUID_V7.test(requestId)) {
    const at = parseInt(requestId.slice(0, 8) + requestId.slice(9, 13), 16);
    for (const meta of source.newestFirst({ from: at, to: at + 1 })) {
      const found = search(source, meta, needle, bodies);
      if (found !== undefined) return found;
      searchedFirst.add(meta.id);
    }
  }
  let searched = 0;
  for (const meta of source.newestFirst({})) {
    if (searchedFirst.has(meta.id)) continue;
    const found = search(source, meta, needle, bodies);
    if (found !== undefined) return found;
    if (++searched % SCAN_CHUNK === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      if (closed()) throw new Error('log store is closed');
    }
  }
  return undefined;
}

function search(source: LogBatchSource, meta: BatchMeta, needle: Buffer, bodies: Database.Statement): LogRecord | undefined {
  const data = source.blob(meta.id);
  if (data === undefined || data.indexOf(needle) < 0) return undefined;
  const batch = source.load(meta, data)!;
  const i = indexOf(batch, needle);
  if (i < 0) return undefined;
  const { has_request_body, ...record } = decodedRecord(batch, i) as LogRecord & { has_request_body: boolean };
  if (has_request_body) {
    const body = bodies.get(record.request_id) as BodyRow | undefined;
    if (body !== undefined) record.request_body = fromBodyRow(body);
  }
  return record;
}

/** The record whose request id is exactly `needle` (a byte match can be inside another string). */
function indexOf(batch: DecodedLogBatch, needle: Buffer): number {
  const { data } = batch;
  for (let i = 0; i < batch.count; i++) {
    // The request id follows the flags byte: a varint length, then its bytes.
    let at = batch.offset[i]! + 1;
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = data[at++]!;
      length += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    if (length === needle.length && data.compare(needle, 0, length, at, at + length) === 0) return i;
  }
  return -1;
}
