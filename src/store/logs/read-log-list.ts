import type { DecodedLogBatch } from './decode-log-batch.ts';
import { decodedRecord } from './decode-log-batch.ts';
import { InvalidLogCursorError } from './invalid-log-cursor.ts';
import { decodeCursor, encodeCursor } from './log-cursor.ts';
import type { LogBatchSource } from './log-batch-source.ts';
import type { LogFilter, LogPage, LogPageResult } from './log-store.ts';
import { recordTest } from './record-filter.ts';
import { wellFormedFilter } from './well-formed-text.ts';

const MAX_PAGE = 500;

interface Found {
  created_at: number;
  seq: number;
  batch: DecodedLogBatch;
  i: number;
}

const newestFirst = (a: Found, b: Found): number => b.created_at - a.created_at || b.seq - a.seq;

/**
 * A page of records, newest first by (created_at, seq). Batches are visited by their newest
 * record, descending; a batch's records are in completion order and batches overlap in time
 * (a long stream lands in a late batch with an early created_at), so the walk stops only once
 * it holds limit + 1 records and the next batch's newest record is older than the last of them.
 */
export function listLogs(source: LogBatchSource, given: LogFilter, page: LogPage): LogPageResult {
  const filter = wellFormedFilter(given);
  const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(page.limit)));
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  if (page.cursor !== undefined && after === undefined) throw new InvalidLogCursorError();
  const want = limit + 1;
  // Records after the cursor are created at or before its time: later batches cannot hold any.
  const to = after === undefined ? filter.to : Math.min(filter.to ?? Infinity, after.created_at + 1);
  let found: Found[] = [];
  for (const meta of source.newestFirst({ ...filter, to })) {
    if (found.length >= want && meta.max_created_at < found[want - 1]!.created_at) break;
    const batch = source.load(meta);
    const test = batch === undefined ? undefined : recordTest(filter, batch);
    if (batch === undefined || test === undefined) continue;
    for (let i = 0; i < batch.count; i++) {
      if (!test(i)) continue;
      const created_at = batch.createdAt[i]!;
      const seq = meta.first_seq + batch.seqOffset[i]!;
      if (after !== undefined && (created_at > after.created_at || (created_at === after.created_at && seq >= after.seq))) continue;
      found.push({ created_at, seq, batch, i });
    }
    if (found.length > want) found = found.sort(newestFirst).slice(0, want);
    else found.sort(newestFirst);
  }
  const items = found.slice(0, limit).map((f) => decodedRecord(f.batch, f.i));
  const last = found[limit - 1];
  return { items, next_cursor: found.length > limit && last !== undefined ? encodeCursor({ created_at: last.created_at, seq: last.seq }) : null };
}
