import type { LogListItem, LogRecord } from './log-record.ts';
import type { StoredObjectStore } from '../stored-object-store.ts';

export type StatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'error';

/** Time bounds are epoch ms: `from` inclusive, `to` exclusive. */
export interface LogFilter {
  from?: number;
  to?: number;
  access_key_id?: number;
  group_id?: string;
  /** Matches the external (client-facing) model name. */
  model?: string;
  status?: number;
  /** A class of statuses, or `error`: the records isErrorRecord counts (error-record.ts), as `errors` does. */
  status_class?: StatusClass;
  /** Exact match of the record's error_code. */
  error_code?: string;
}

export interface LogPage {
  /** Clamped to 1..500. */
  limit: number;
  /** Opaque value from a previous page's `next_cursor`. */
  cursor?: string;
}

export interface LogPageResult {
  items: LogListItem[];
  /** null on the last page. */
  next_cursor: string | null;
}

export type UsageDimension = 'key' | 'group' | 'model';

export interface UsageQuery {
  from?: number;
  to?: number;
  bucket: 'hour' | 'day';
  group_by: UsageDimension[];
  access_key_id?: number;
  group_id?: string;
  model?: string;
  /** Shifts day buckets to a local day (e.g. 480 for UTC+8); default 0. */
  utc_offset_minutes?: number;
  /**
   * At most this many rows are wanted: a store may stop collecting once it has one more and
   * return those, so that a caller can tell "too many" apart without the store building them all.
   */
  max_rows?: number;
}

export interface UsageTotals {
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost: number;
}

export interface UsageRow extends UsageTotals {
  /** Epoch ms of the bucket's start. */
  bucket_start: number;
  /** Present when grouped by key. */
  access_key_id?: number | null;
  /** Present when grouped by group. */
  group_id?: string | null;
  /** Present when grouped by model (external model). */
  model?: string | null;
}

export interface StatisticsQuery {
  from?: number;
  to?: number;
  access_key_id?: number;
  /** How many top models to return; default 5. */
  top?: number;
}

export interface ModelStatistics extends UsageTotals {
  model: string | null;
}

export interface Statistics extends UsageTotals {
  error_rate: number;
  client_aborted: number;
  avg_duration_ms: number;
  avg_ttfb_ms: number;
  by_status_class: Record<'1xx' | '2xx' | '3xx' | '4xx' | '5xx', number>;
  top_models: ModelStatistics[];
}

/**
 * The highest id of each kind a store names (0 for none): in its records, the usage kept of
 * records retention deleted, and the stored objects it remembers.
 */
export interface NamedIds {
  group: number;
  credential: number;
  access_key: number;
}

/**
 * What counts against a quota: requests the gateway forwarded (at least one upstream attempt;
 * its own refusals and model lists do not count), input plus output tokens, and cost.
 */
export interface KeyUsage {
  requests: number;
  tokens: number;
  cost: number;
}

/**
 * Request logs and usage. `append` is synchronous and cheap (records are buffered and written
 * in batches); reads see every appended record; `close` writes everything still buffered.
 * Reads are async so that an implementation on a shared database server fits the same shape.
 */
export interface LogStore {
  append(record: LogRecord): void;
  get(requestId: string): Promise<LogRecord | undefined>;
  list(filter: LogFilter, page: LogPage): Promise<LogPageResult>;
  usage(query: UsageQuery): Promise<UsageRow[]>;
  statistics(query: StatisticsQuery): Promise<Statistics>;
  /**
   * What an AccessKey used against its quota from `from` (inclusive) to `to` (exclusive), each
   * epoch ms on a UTC hour as every quota period start is, an end left undefined being open
   * (both: its whole life), records deleted by `prune` included: their usage is kept per hour.
   */
  keyUsage(accessKeyId: number, from?: number, to?: number): Promise<KeyUsage>;
  /**
   * Deletes the records created before `before` (epoch ms) and their recorded bodies, a batch
   * at a time so that appends and reads go on in between; resolves to how many were deleted.
   */
  prune(before: number): Promise<number>;
  /** Records appended but not yet written, where the store buffers them. */
  readonly buffered?: number;
  /** Records dropped since the store opened because it could not keep up, where it can drop any. */
  readonly dropped?: number;
  /** Bytes of the buffered records (their encoding and recorded bodies' text), where the store bounds them. */
  readonly bufferedBytes?: number;
  /** Recorded bodies let go since the store opened to keep within that bound (their records kept, the body marked `dropped`). */
  readonly bodiesDropped?: number;
  /**
   * The highest ids the store names, where it outlives the process: a configuration restored
   * from an older backup, or started empty beside it, must not give them to new records
   * (a new AccessKey would read an old one's records and bodies, and inherit its usage).
   */
  namedIds?(): Promise<NamedIds>;
  /** Where the data plane keeps the stored objects it remembers, with the records, where the store keeps them. */
  readonly storedObjects?: StoredObjectStore;
  /** Writes buffered records now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
