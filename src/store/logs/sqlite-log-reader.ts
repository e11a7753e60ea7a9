import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LogRecord } from './log-record.ts';
import type { KeyUsage, LogFilter, LogPage, LogPageResult, Statistics, StatisticsQuery, UsageQuery, UsageRow } from './log-store.ts';
import type { LogReader } from '../log-store.ts';
import { LogBatchSource } from './log-batch-source.ts';
import { listLogs } from './read-log-list.ts';
import { findLogRecord } from './find-log-record.ts';
import { readUsage } from './read-usage.ts';
import { readStatistics } from './read-statistics.ts';
import { readKeyUsage } from './read-key-usage.ts';
import { preparedStatements } from './prepared-statements.ts';
import { LOG_DB_FILE } from './sqlite-log-store.ts';

const TABLES = ['log_batches', 'log_batch_dims', 'usage_rollup', 'pruned_usage_by_hour', 'request_bodies'];

/** A log file that cannot be read as it is; the message names the file. */
export class LogFileError extends Error {
  constructor(readonly file: string, readonly reason: string) {
    super(`${file}: ${reason}`);
    this.name = 'LogFileError';
  }
}

/**
 * Reads `<dataDir>/logs.sqlite` without writing anything to the data directory: no schema,
 * no migration, no pragma, no checkpoint. Opening a WAL database read-only makes SQLite
 * create its -wal and -shm files when they are absent, so a file without them (no server
 * has it open) is read into memory instead, up to IN_MEMORY_COPY_LIMIT_BYTES; with them (a
 * server is running), the file is opened read-only and reads see the server's commits.
 */
export class SqliteLogReader implements LogReader {
  readonly #db: Database.Database;
  readonly #source: LogBatchSource;
  readonly #prepare: ReturnType<typeof preparedStatements>;
  readonly #bodies: Database.Statement;
  #closed = false;

  constructor(readonly file: string) {
    this.#db = openReadOnly(file);
    try {
      const present = new Set(this.#db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
      const missing = TABLES.find((name) => !present.has(name));
      if (missing !== undefined) {
        const old = present.has('request_logs') ? 'it was written by an older version; start the server once to migrate it' : 'not a switchyard log database';
        throw new LogFileError(file, `${old} (no table ${missing})`);
      }
      this.#prepare = preparedStatements(this.#db);
      this.#source = new LogBatchSource(this.#prepare);
      this.#bodies = this.#db.prepare('SELECT * FROM request_bodies WHERE request_id = ?');
    } catch (err) {
      this.#db.close();
      if (err instanceof LogFileError) throw err;
      throw new LogFileError(file, (err as Error).message);
    }
  }

  async get(requestId: string): Promise<LogRecord | undefined> {
    this.#open();
    return findLogRecord(this.#source, this.#bodies, requestId, () => this.#closed);
  }

  async list(filter: LogFilter, page: LogPage): Promise<LogPageResult> {
    this.#open();
    return listLogs(this.#source, filter, page);
  }

  async usage(query: UsageQuery): Promise<UsageRow[]> {
    this.#open();
    return readUsage(this.#prepare, this.#source, query);
  }

  async statistics(query: StatisticsQuery): Promise<Statistics> {
    this.#open();
    return readStatistics(this.#prepare, this.#source, query);
  }

  async keyUsage(accessKeyId: number, from?: number, to?: number): Promise<KeyUsage> {
    this.#open();
    return readKeyUsage(this.#prepare, this.#source, accessKeyId, from, to);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  #open(): void {
    if (this.#closed) throw new Error('log reader is closed');
  }
}

/**
 * Past this size the file is opened in place rather than copied into memory: an operator's
 * offline inspect of a long-lived gateway must not need memory for every record it ever logged.
 * SQLite may then leave empty -wal and -shm files beside it; the database file is not changed.
 */
const IN_MEMORY_COPY_LIMIT_BYTES = 256 * 1024 * 1024;

function openReadOnly(file: string): Database.Database {
  try {
    if (existsSync(`${file}-wal`) || statSync(file).size > IN_MEMORY_COPY_LIMIT_BYTES) return new Database(file, { readonly: true, fileMustExist: true });
    const image = readFileSync(file);
    // Bytes 18 and 19 say WAL; an in-memory copy has no WAL, so it is marked as a rollback journal file.
    if (image.length >= 20 && image[18] === 2 && image[19] === 2) image[18] = image[19] = 1;
    return new Database(image, { readonly: true });
  } catch (err) {
    throw new LogFileError(file, (err as Error).message);
  }
}

/** The reader of `<dataDir>/logs.sqlite`, or undefined when there is no such file (no records). */
export function openSqliteLogReader(dataDir: string): SqliteLogReader | undefined {
  const file = join(dataDir, LOG_DB_FILE);
  if (!existsSync(file)) return undefined;
  return new SqliteLogReader(file);
}
