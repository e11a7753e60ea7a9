import { ROLLUP_SUM_COLUMNS } from './log-rollup.ts';

/** The hourly rollup's table; files from before it gain it at open (hourly-rollup.ts). */
export const HOURLY_ROLLUP = 'usage_rollup_hour';

/** A rollup table and its indexes: a row per slot and combination of dimensions, a column per sum. */
export function rollupTableSchema(table: string): string {
  const sums = ROLLUP_SUM_COLUMNS.map((c) => `  ${c} ${c === 'cost' ? 'REAL' : 'INTEGER'} NOT NULL`).join(',\n');
  return `CREATE TABLE IF NOT EXISTS ${table} (
  slot_start INTEGER NOT NULL,
  access_key_id INTEGER,
  group_id TEXT,
  external_model TEXT,
${sums}
);
CREATE INDEX IF NOT EXISTS ${table}_slot ON ${table} (slot_start, access_key_id, group_id, external_model);
CREATE INDEX IF NOT EXISTS ${table}_key ON ${table} (access_key_id, slot_start);`;
}

/**
 * Request logs are stored a batch per row: the records of one batch (up to 1024, those that
 * completed within about 100 ms) encoded together (encode-log-batch.ts) in one blob, written
 * in one transaction. Writing a row per record with its indexes cost the writer about 10 us
 * per record; a batch row costs a small fraction of that. Reads find their batches through
 * the time range and the dimensions each batch holds, and aggregate reads use rollups.
 *
 * - `log_batches`: `seq` of a record is `first_seq` plus its offset in the batch, so
 *   (created_at, seq) orders all records (the cursor). `end_seq` is where the next batch's
 *   seqs start; a batch rewritten by prune keeps it and its records' seqs. `batch_key` is
 *   unique per batch made: a batch sent again (after a worker died before acknowledging it)
 *   is stored once. `data` is last so that reading the other columns leaves the blob's pages.
 *   Ids are never reused (AUTOINCREMENT, one counter update per batch), so a batch decoded and
 *   cached by id is stale only if prune rewrote it, which drops it from the cache.
 * - `log_batch_dims`: the distinct values a batch holds per filterable dimension (kind 1
 *   access_key_id, 2 group_id, 3 external_model, 4 status, 5 error_code), so that filtered reads skip
 *   batches without a match. `value` has no type, so it keeps what it is given: numbers for
 *   keys and statuses, text for groups and models.
 * - `log_batch_combos`: per batch, a Bloom filter over the combinations of those values its
 *   records hold together (combo-bloom.ts), so that a filter on several dimensions, each in
 *   most batches but rarely together, skips a batch before its blob is read. It only rules
 *   batches out: a batch without a row is read. A file from before it gains it at open
 *   (combo-fill.ts).
 * - `usage_rollup`: per 1-minute slot of created_at and (key, group, model), the sums that
 *   usage, statistics and quotas read. It and `log_batch_dims` derive from the batches, so a
 *   change of what they hold is rebuilt from them (LOG_SCHEMA_VERSION). Its NULL dimensions are matched with IS, so the rows
 *   are found through an index rather than a unique constraint (NULLs are never equal there).
 * - `usage_rollup_hour`: the same sums per UTC hour (`slot_start` the hour's start), kept in
 *   step with `usage_rollup` in the same transactions (every write of it goes through
 *   LogBatchWriter.applyRollup), so that reads of long ranges sum a row per hour where a
 *   bucket holds the whole hour (rollup-ranges.ts). With steady traffic the minute rollup
 *   holds nearly a row per request; the hourly one a row per hour and combination in use.
 * - `pruned_usage_by_hour`: what retention deleted, per AccessKey and UTC hour, so that quotas
 *   keep counting it: every quota period starts on an hour, so the hours at or after a
 *   period's start are in it.
 * - `request_bodies`: recorded bodies, apart so that no scan reads them; `is_json` says how
 *   `body` is stored (text, JSON or base64: body-row.ts); `batch_id` lets prune
 *   delete a batch's bodies (the column is last because files from before batches gain it
 *   with ALTER TABLE).
 * - `stored_objects`: the stored objects (responses, compactions, voices) the data plane
 *   remembers, with their holder and creator (src/store/stored-object-store.ts), written in the
 *   transactions of the batches that carry their changes and kept apart from them (retention
 *   does not touch them): the newest STORED_OBJECTS_KEPT by `seq` (stored-objects-table.ts).
 *   A file from before it gains it by CREATE TABLE IF NOT EXISTS.
 */
export const LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS log_batches (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  batch_key TEXT NOT NULL UNIQUE,
  first_seq INTEGER NOT NULL,
  end_seq INTEGER NOT NULL,
  count INTEGER NOT NULL,
  min_created_at INTEGER NOT NULL,
  max_created_at INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS log_batches_newest ON log_batches (max_created_at, min_created_at);
CREATE INDEX IF NOT EXISTS log_batches_oldest ON log_batches (min_created_at);
CREATE TABLE IF NOT EXISTS log_batch_dims (
  kind INTEGER NOT NULL,
  value NOT NULL,
  batch_id INTEGER NOT NULL,
  PRIMARY KEY (kind, value, batch_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS log_batch_dims_batch ON log_batch_dims (batch_id);
CREATE TABLE IF NOT EXISTS log_batch_combos (
  batch_id INTEGER PRIMARY KEY,
  bloom BLOB NOT NULL
);
${rollupTableSchema('usage_rollup')}
${rollupTableSchema(HOURLY_ROLLUP)}
CREATE TABLE IF NOT EXISTS pruned_usage_by_hour (
  access_key_id INTEGER NOT NULL,
  hour_start INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  PRIMARY KEY (access_key_id, hour_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS request_bodies (
  request_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  original_bytes INTEGER NOT NULL,
  body TEXT NOT NULL,
  is_json INTEGER NOT NULL,
  batch_id INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS request_bodies_batch ON request_bodies (batch_id);
CREATE TABLE IF NOT EXISTS stored_objects (
  seq INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  group_id INTEGER NOT NULL,
  credential_id INTEGER NOT NULL,
  created_by INTEGER,
  unbilled INTEGER NOT NULL,
  upstream_model TEXT,
  external_model TEXT
);
`;

/** log_batch_dims.kind */
export const DIM_KEY = 1;
export const DIM_GROUP = 2;
export const DIM_MODEL = 3;
export const DIM_STATUS = 4;
export const DIM_ERROR_CODE = 5;

/**
 * PRAGMA user_version of a file whose derived tables are current; an older one has them
 * rebuilt from its batches when opened (rebuild-derived-tables.ts). 1: `errors` counts an
 * answer that failed after it began (isErrorRecord), and the dimensions hold error codes.
 */
export const LOG_SCHEMA_VERSION = 1;
