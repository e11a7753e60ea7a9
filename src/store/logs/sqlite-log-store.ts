import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LogRecord } from './log-record.ts';
import type {
  KeyUsage,
  LogFilter,
  LogPage,
  LogPageResult,
  LogStore,
  Statistics,
  StatisticsQuery,
  UsageDimension,
  UsageQuery,
  UsageRow,
} from './log-store.ts';
import { LOG_SCHEMA } from './log-schema.ts';
import { BODY_COLUMNS, LOG_COLUMNS, encodeLogRecord, fromBodyRow, fromListRow, fromLogRow, type BodyRow, type EncodedLogRecord, type LogRow } from './log-row.ts';
import { decodeCursor, encodeCursor } from './log-cursor.ts';
import { logFilterSql } from './log-filter-sql.ts';
import { BatchBuffer, type BatchBufferOptions } from './batch-buffer.ts';

export const LOG_DB_FILE = 'logs.sqlite';

export type SqliteLogStoreOptions = BatchBufferOptions;

const MAX_PAGE = 500;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

const DIMENSION_COLUMN: Readonly<Record<UsageDimension, { column: string; as: 'access_key_id' | 'group_id' | 'model' }>> = {
  key: { column: 'access_key_id', as: 'access_key_id' },
  group: { column: 'group_id', as: 'group_id' },
  model: { column: 'external_model', as: 'model' },
};

const TOTALS_SQL = `COUNT(*) AS requests,
  COALESCE(SUM(status >= 400), 0) AS errors,
  COALESCE(SUM(input_tokens), 0) AS input_tokens,
  COALESCE(SUM(output_tokens), 0) AS output_tokens,
  COALESCE(SUM(cached_tokens), 0) AS cached_tokens,
  COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
  COALESCE(SUM(cost), 0) AS cost`;

const INSERT_LOG = `INSERT INTO request_logs (${LOG_COLUMNS.join(', ')})
  VALUES (${LOG_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT(request_id) DO NOTHING`;

const INSERT_BODY = `INSERT INTO request_bodies (${BODY_COLUMNS.join(', ')})
  VALUES (${BODY_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT(request_id) DO NOTHING`;

/** Records deleted per prune transaction: about 5 ms of the writer's time, measured here. */
const PRUNE_BATCH = 1000;

/** The oldest records created before ?, at most ? of them: both deletes of a prune batch select the same ones. */
const OLDEST_BEFORE = 'FROM request_logs WHERE created_at < ? ORDER BY created_at, seq LIMIT ?';
const KEY_USAGE_SQL = `COALESCE(SUM(attempt_count > 0), 0) AS requests,
  COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens,
  COALESCE(SUM(cost), 0) AS cost`;

/**
 * LogStore on SQLite (`<dataDir>/logs.sqlite`, WAL). better-sqlite3 is synchronous, so
 * appends are buffered and written in batches of one transaction each (see BatchBuffer);
 * reads write the buffer first, so they always see every appended record.
 */
export class SqliteLogStore implements LogStore {
  readonly #db: Database.Database;
  readonly #buffer: BatchBuffer<EncodedLogRecord>;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #pruneBatch: (before: number) => number;
  #closed = false;

  constructor(dataDir: string, options: SqliteLogStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    this.#db = new Database(join(dataDir, LOG_DB_FILE));
    this.#db.pragma('journal_mode = WAL');
    // WAL + NORMAL survives a process crash; only a power loss can drop the last commits.
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(LOG_SCHEMA);
    const insertLog = this.#db.prepare(INSERT_LOG);
    const insertBody = this.#db.prepare(INSERT_BODY);
    const writeBatch = this.#db.transaction((records: EncodedLogRecord[]) => {
      for (const [row, body] of records) {
        insertLog.run(row);
        if (body !== undefined) insertBody.run(body);
      }
    });
    this.#buffer = new BatchBuffer<EncodedLogRecord>((batch) => writeBatch(batch), options);
    const pruneBodies = this.#db.prepare(`DELETE FROM request_bodies WHERE request_id IN (SELECT request_id ${OLDEST_BEFORE})`);
    const pruneLogs = this.#db.prepare(`DELETE FROM request_logs WHERE seq IN (SELECT seq ${OLDEST_BEFORE})`);
    const keepKeyUsage = this.#db.prepare(
      `INSERT INTO pruned_usage_by_hour (access_key_id, hour_start, requests, tokens, cost)
       SELECT access_key_id, created_at / ${HOUR_MS} * ${HOUR_MS} AS hour_start, ${KEY_USAGE_SQL} FROM request_logs
       WHERE seq IN (SELECT seq ${OLDEST_BEFORE}) AND access_key_id IS NOT NULL GROUP BY access_key_id, hour_start
       ON CONFLICT (access_key_id, hour_start) DO UPDATE SET
         requests = requests + excluded.requests, tokens = tokens + excluded.tokens, cost = cost + excluded.cost`,
    );
    this.#pruneBatch = this.#db.transaction((before: number) => {
      keepKeyUsage.run(before, PRUNE_BATCH);
      pruneBodies.run(before, PRUNE_BATCH);
      return pruneLogs.run(before, PRUNE_BATCH).changes;
    });
  }

  /** Records waiting in memory. */
  get buffered(): number {
    return this.#buffer.size;
  }

  append(record: LogRecord): void {
    this.appendEncoded(encodeLogRecord(record));
  }

  /** Appends a record encoded by `encodeLogRecord` (what the log writer's thread receives). */
  appendEncoded(record: EncodedLogRecord): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#buffer.add(record);
  }

  async flush(): Promise<void> {
    this.#buffer.flushAll();
  }

  async get(requestId: string): Promise<LogRecord | undefined> {
    this.#readable();
    const row = this.#statement('SELECT * FROM request_logs WHERE request_id = ?').get(requestId) as LogRow | undefined;
    if (row === undefined) return undefined;
    const record: LogRecord = fromLogRow(row);
    const body = this.#statement('SELECT * FROM request_bodies WHERE request_id = ?').get(requestId) as BodyRow | undefined;
    if (body !== undefined) record.request_body = fromBodyRow(body);
    return record;
  }

  async list(filter: LogFilter, page: LogPage): Promise<LogPageResult> {
    this.#readable();
    const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(page.limit)));
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
    if (page.cursor !== undefined && after === undefined) throw new RangeError('invalid cursor');
    const where = logFilterSql(
      filter,
      after === undefined ? [] : [{ sql: '(created_at, seq) < (?, ?)', params: [after.created_at, after.seq] }],
    );
    const rows = this.#statement(
      `SELECT l.*, EXISTS (SELECT 1 FROM request_bodies b WHERE b.request_id = l.request_id) AS has_request_body
       FROM request_logs l${where.sql} ORDER BY created_at DESC, seq DESC LIMIT ?`,
    ).all(...where.params, limit + 1) as Array<LogRow & { has_request_body: number; seq: number }>;
    const more = rows.length > limit;
    const pageRows = more ? rows.slice(0, limit) : rows;
    const last = pageRows[pageRows.length - 1];
    return {
      items: pageRows.map(fromListRow),
      next_cursor: more && last !== undefined ? encodeCursor({ created_at: last.created_at, seq: last.seq }) : null,
    };
  }

  async usage(query: UsageQuery): Promise<UsageRow[]> {
    this.#readable();
    const size = query.bucket === 'hour' ? HOUR_MS : DAY_MS;
    const offset = Math.trunc(query.utc_offset_minutes ?? 0) * 60_000;
    const dimensions = [...new Set(query.group_by)].map((d) => DIMENSION_COLUMN[d]);
    const select = dimensions.map((d) => `${d.column} AS ${d.as}`);
    const where = logFilterSql(query);
    const groupBy = ['bucket_start', ...dimensions.map((d) => d.as)].join(', ');
    const rows = this.#statement(
      `SELECT CAST((created_at + ?) / ? AS INTEGER) * ? - ? AS bucket_start${select.map((s) => `, ${s}`).join('')}, ${TOTALS_SQL}
       FROM request_logs${where.sql} GROUP BY ${groupBy} ORDER BY ${groupBy}`,
    ).all(offset, size, size, offset, ...where.params) as UsageRow[];
    return rows;
  }

  async statistics(query: StatisticsQuery): Promise<Statistics> {
    this.#readable();
    const where = logFilterSql(query);
    const totals = this.#statement(
      `SELECT ${TOTALS_SQL},
        COALESCE(SUM(client_aborted), 0) AS client_aborted,
        COALESCE(AVG(duration_ms), 0) AS avg_duration_ms,
        COALESCE(AVG(ttfb_ms), 0) AS avg_ttfb_ms,
        COALESCE(SUM(status >= 100 AND status < 200), 0) AS s1,
        COALESCE(SUM(status >= 200 AND status < 300), 0) AS s2,
        COALESCE(SUM(status >= 300 AND status < 400), 0) AS s3,
        COALESCE(SUM(status >= 400 AND status < 500), 0) AS s4,
        COALESCE(SUM(status >= 500 AND status < 600), 0) AS s5
       FROM request_logs${where.sql}`,
    ).get(...where.params) as Omit<Statistics, 'error_rate' | 'by_status_class' | 'top_models'> &
      Record<'s1' | 's2' | 's3' | 's4' | 's5', number>;
    const topModels = this.#statement(
      `SELECT external_model AS model, ${TOTALS_SQL} FROM request_logs${where.sql}
       GROUP BY external_model ORDER BY requests DESC, model LIMIT ?`,
    ).all(...where.params, Math.max(1, Math.trunc(query.top ?? 5))) as Statistics['top_models'];
    const { s1, s2, s3, s4, s5, ...rest } = totals;
    return {
      ...rest,
      error_rate: rest.requests === 0 ? 0 : rest.errors / rest.requests,
      by_status_class: { '1xx': s1, '2xx': s2, '3xx': s3, '4xx': s4, '5xx': s5 },
      top_models: topModels,
    };
  }

  async keyUsage(accessKeyId: number, from?: number): Promise<KeyUsage> {
    this.#readable();
    const since = from ?? Number.MIN_SAFE_INTEGER;
    const logged = this.#statement(`SELECT ${KEY_USAGE_SQL} FROM request_logs WHERE access_key_id = ? AND created_at >= ?`).get(accessKeyId, since) as KeyUsage;
    const pruned = this.#statement(
      'SELECT COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(tokens), 0) AS tokens, COALESCE(SUM(cost), 0) AS cost FROM pruned_usage_by_hour WHERE access_key_id = ? AND hour_start >= ?',
    ).get(accessKeyId, since) as KeyUsage;
    return { requests: logged.requests + pruned.requests, tokens: logged.tokens + pruned.tokens, cost: logged.cost + pruned.cost };
  }

  /** One transaction per PRUNE_BATCH records, yielding in between. */
  async prune(before: number): Promise<number> {
    this.#readable();
    let deleted = 0;
    for (;;) {
      const batch = this.#pruneBatch(before);
      deleted += batch;
      if (batch < PRUNE_BATCH) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
      // A close in between ends it; the rest goes at the next prune.
      if (this.#closed) return deleted;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.flushAll();
    this.#db.pragma('wal_checkpoint(TRUNCATE)');
    this.#db.close();
  }

  #readable(): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#buffer.flushAll();
  }

  #statement(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}

export function openSqliteLogStore(dataDir: string, options: SqliteLogStoreOptions = {}): SqliteLogStore {
  return new SqliteLogStore(dataDir, options);
}
