import type Database from 'better-sqlite3';
import type { PrepareStatement } from './prepared-statements.ts';
import { filterProbes, mayHoldAll } from './combo-bloom.ts';
import { hasTable } from './has-table.ts';
import { decodeLogBatch, type DecodedLogBatch } from './decode-log-batch.ts';
import type { LogFilter } from './log-store.ts';
import { DIM_ERROR_CODE, DIM_GROUP, DIM_KEY, DIM_MODEL, DIM_STATUS } from './log-schema.ts';
import { CLIENT_ENDED_CODES } from './error-record.ts';
import { STATUS_CLASS_RANGE, recordTest } from './record-filter.ts';
import { EARLIEST, LATEST } from './time-slots.ts';

/** A log_batches row without its blob. */
export interface BatchMeta {
  id: number;
  first_seq: number;
  count: number;
  min_created_at: number;
  max_created_at: number;
}

/**
 * Batches fetched by the first query while walking candidates: few are read when a page fills
 * early. Each further query fetches twice as many, up to MAX_CHUNK: every query evaluates the
 * dimensions' IN subqueries again, which for common values list nearly every batch.
 */
const CHUNK = 64;
const MAX_CHUNK = 1024;
/** Decoded batches kept: the newest pages and the partial minutes of repeated queries hit them. */
const CACHED_BATCHES = 16;

/**
 * Finds the batches that may hold records of a filter (their created_at range overlaps its
 * time range, for a key, group, model, status or error code their dimensions contain it, and
 * for several of these their bloom may hold them together) and decodes them, keeping the last
 * few decoded. The blooms are read with the candidates, before any blob.
 */
export class LogBatchSource {
  readonly #prepare: PrepareStatement;
  readonly #blob: Database.Statement;
  /** By batch id; a Map iterates in insertion order, so the first entry is the least recently used. */
  readonly #cache = new Map<number, { count: number; batch: DecodedLogBatch }>();

  constructor(prepare: PrepareStatement) {
    this.#prepare = prepare;
    this.#blob = prepare('SELECT data FROM log_batches WHERE id = ?').pluck();
  }

  /**
   * Candidate batches, by max_created_at descending. They are fetched a chunk at a time, so a
   * caller may run other statements (or yield) between them.
   */
  *newestFirst(filter: LogFilter): Generator<BatchMeta> {
    const probes = filterProbes(filter);
    const blooms = probes !== undefined && hasTable(this.#prepare, 'log_batch_combos');
    const { sql, params } = candidateSql(filter, blooms);
    const statement = this.#prepare(sql);
    let after: [number, number, number] = [LATEST + 1, LATEST + 1, Number.MAX_SAFE_INTEGER];
    for (let chunk = CHUNK; ; chunk = Math.min(chunk * 2, MAX_CHUNK)) {
      const rows = statement.all(...params, ...after, chunk) as Array<BatchMeta & { bloom?: Buffer | null }>;
      for (const { bloom, ...meta } of rows) {
        // A batch without a bloom (not filled yet) is read.
        if (bloom == null || probes === undefined || mayHoldAll(bloom, probes)) yield meta;
      }
      const last = rows[rows.length - 1];
      if (rows.length < chunk || last === undefined) return;
      after = [last.max_created_at, last.min_created_at, last.id];
    }
  }

  /** Calls `visit` for every record that matches the filter, batch by batch. */
  forEachRecord(filter: LogFilter, visit: (batch: DecodedLogBatch, i: number) => void): void {
    for (const meta of this.newestFirst(filter)) {
      const batch = this.load(meta);
      const test = batch === undefined ? undefined : recordTest(filter, batch);
      if (batch === undefined || test === undefined) continue;
      for (let i = 0; i < batch.count; i++) if (test(i)) visit(batch, i);
    }
  }

  /** The batch decoded, or undefined when it is gone (a prune deleted it in between). */
  load(meta: BatchMeta, data?: Buffer): DecodedLogBatch | undefined {
    const cached = this.#cache.get(meta.id);
    if (cached !== undefined && cached.count === meta.count) {
      this.#cache.delete(meta.id);
      this.#cache.set(meta.id, cached);
      return cached.batch;
    }
    const blob = data ?? this.blob(meta.id);
    if (blob === undefined) return undefined;
    const batch = decodeLogBatch(blob);
    this.#cache.delete(meta.id);
    this.#cache.set(meta.id, { count: batch.count, batch });
    if (this.#cache.size > CACHED_BATCHES) this.#cache.delete(this.#cache.keys().next().value!);
    return batch;
  }

  blob(id: number): Buffer | undefined {
    return this.#blob.get(id) as Buffer | undefined;
  }

  /** Drops a batch that was rewritten or deleted. */
  forget(id: number): void {
    this.#cache.delete(id);
  }
}

/**
 * The filter's dimensions select batches through log_batch_dims with non-correlated IN
 * subqueries, which SQLite evaluates once per query, then walks the time index.
 */
function candidateSql(filter: LogFilter, blooms: boolean): { sql: string; params: Array<string | number> } {
  const clauses = ['max_created_at >= ?', 'min_created_at < ?'];
  const params: Array<string | number> = [filter.from ?? EARLIEST, filter.to ?? LATEST];
  const dims = (sql: string, ...values: Array<string | number>) => {
    clauses.push(`id IN (${sql})`);
    params.push(...values);
  };
  const dimSql = (kind: number, condition: string) => `SELECT batch_id FROM log_batch_dims WHERE kind = ${kind} AND ${condition}`;
  const dim = (kind: number, condition: string, ...values: Array<string | number>) => dims(dimSql(kind, condition), ...values);
  if (filter.access_key_id !== undefined) dim(DIM_KEY, 'value = ?', filter.access_key_id);
  if (filter.group_id !== undefined) dim(DIM_GROUP, 'value = ?', filter.group_id);
  if (filter.model !== undefined) dim(DIM_MODEL, 'value = ?', filter.model);
  if (filter.status !== undefined) dim(DIM_STATUS, 'value = ?', filter.status);
  if (filter.error_code !== undefined) dim(DIM_ERROR_CODE, 'value = ?', filter.error_code);
  if (filter.status_class === 'error') {
    // isErrorRecord's two halves: a status of 400 or more, or an error code not the client's.
    const clientCodes = CLIENT_ENDED_CODES.map(() => '?').join(', ');
    dims(`${dimSql(DIM_STATUS, 'value >= 400')} UNION ${dimSql(DIM_ERROR_CODE, `value NOT IN (${clientCodes})`)}`, ...CLIENT_ENDED_CODES);
  } else if (filter.status_class !== undefined) {
    dim(DIM_STATUS, 'value >= ? AND value < ?', ...STATUS_CLASS_RANGE[filter.status_class]);
  }
  clauses.push('(max_created_at, min_created_at, id) < (?, ?, ?)');
  return {
    sql: `SELECT id, first_seq, count, min_created_at, max_created_at${blooms ? ', (SELECT bloom FROM log_batch_combos WHERE batch_id = log_batches.id) AS bloom' : ''} FROM log_batches WHERE ${clauses.join(' AND ')}
      ORDER BY max_created_at DESC, min_created_at DESC, id DESC LIMIT ?`,
    params,
  };
}
