import { mkdirSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LogRecord } from './log-record.ts';
import type { KeyUsage, LogFilter, LogPage, LogPageResult, LogStore, NamedIds, Statistics, StatisticsQuery, UsageQuery, UsageRow } from './log-store.ts';
import { LOG_SCHEMA } from './log-schema.ts';
import { LogBatchAppender, type LogBatchAppenderOptions } from './log-batch-appender.ts';
import { LogBatchSource } from './log-batch-source.ts';
import { LogBatchWriter, type SealedLogBatch } from './write-log-batch.ts';
import { LogBatchPruner } from './prune-log-batches.ts';
import { addBodyBatchColumn, migrateRequestLogs } from './migrate-request-logs.ts';
import { rebuildDerivedTables } from './rebuild-derived-tables.ts';
import { addHourlyRollup } from './hourly-rollup.ts';
import { fillComboBlooms } from './combo-fill.ts';
import { listLogs } from './read-log-list.ts';
import { findLogRecord } from './find-log-record.ts';
import { readUsage } from './read-usage.ts';
import { readStatistics } from './read-statistics.ts';
import { readKeyUsage } from './read-key-usage.ts';
import { readNamedIds } from './read-named-ids.ts';
import { preparedStatements, type PrepareStatement } from './prepared-statements.ts';
import type { StoredObject, StoredObjectChange, StoredObjectStore } from '../stored-object-store.ts';

export const LOG_DB_FILE = 'logs.sqlite';

export interface SqliteLogStoreOptions extends LogBatchAppenderOptions {
  /** One line for the operator about slow work on open (a rebuild, or the hourly rollup's first sum, after an upgrade). */
  onNotice?: (message: string) => void;
}

/** How often, at most, a write checks that the database file is still the one opened. */
const FILE_CHECK_MS = 1000;

/**
 * LogStore on SQLite (`<dataDir>/logs.sqlite`, WAL), a row per batch of records (see
 * log-schema.ts). `append` encodes the record into the open batch; batches are written one
 * transaction each (see LogBatchAppender). Reads write every pending batch first, so they
 * always see every appended record. Opening a file from before batches moves its records into
 * batches first (migrate-request-logs.ts), one from before the hourly rollup has it summed from
 * the minute rollup (hourly-rollup.ts), and one of an older LOG_SCHEMA_VERSION has its rollups
 * and dimensions rebuilt (rebuild-derived-tables.ts), and batches stored without a bloom of
 * their combinations of dimensions get one (combo-fill.ts).
 */
export class SqliteLogStore implements LogStore, StoredObjectStore {
  readonly storedObjects: StoredObjectStore = this;
  readonly #db: Database.Database;
  readonly #writer: LogBatchWriter;
  readonly #appender: LogBatchAppender;
  readonly #source: LogBatchSource;
  readonly #pruner: LogBatchPruner;
  readonly #bodies: Database.Statement;
  readonly #prepare: PrepareStatement;
  readonly #path: string;
  /** The opened file's identity: a file removed or replaced under the open database would take every later write with it. */
  readonly #file: Stats;
  #fileCheckedAt = Date.now();
  #fileGone: Error | undefined;
  #closed = false;

  constructor(dataDir: string, options: SqliteLogStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    this.#path = join(dataDir, LOG_DB_FILE);
    this.#db = new Database(this.#path);
    this.#db.pragma('journal_mode = WAL');
    // WAL + NORMAL survives a process crash; only a power loss can drop the last commits.
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#file = this.#opened(() => statSync(this.#path));
    const writer = this.#opened(() => {
      addBodyBatchColumn(this.#db);
      addHourlyRollup(this.#db, options.onNotice);
      this.#db.exec(LOG_SCHEMA);
      const writer = new LogBatchWriter(this.#db);
      migrateRequestLogs(this.#db, writer);
      rebuildDerivedTables(this.#db, writer, options.onNotice);
      fillComboBlooms(this.#db, writer, options.onNotice);
      proveWritable(this.#db);
      return writer;
    });
    this.#writer = writer;
    this.#prepare = preparedStatements(this.#db);
    this.#source = new LogBatchSource(this.#prepare);
    this.#pruner = new LogBatchPruner(this.#db, writer, this.#source);
    this.#bodies = this.#db.prepare('SELECT * FROM request_bodies WHERE request_id = ?');
    this.#appender = new LogBatchAppender((batch) => {
      this.#checkFile();
      writer.write(batch);
    }, options);
  }

  /** Records not yet written. */
  get buffered(): number {
    return this.#appender.size;
  }

  /** Records dropped because writes kept failing while more than `maxBuffered` records, or `maxBufferedBytes`, waited. */
  get dropped(): number {
    return this.#appender.dropped;
  }

  /** Recorded bodies let go (marked `dropped`) because writes kept failing while more than `maxBufferedBytes` waited. */
  get bodiesDropped(): number {
    return this.#appender.bodiesDropped;
  }

  /** Bytes of the records not yet written, as `maxBufferedBytes` counts them. */
  get bufferedBytes(): number {
    return this.#appender.bufferedBytes;
  }

  append(record: LogRecord): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#appender.append(record);
  }

  /** Stores a batch sealed by another appender (what the log writer's thread receives); a batch whose key is stored already is ignored. */
  appendBatch(batch: SealedLogBatch): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#appender.enqueue(batch);
  }

  recordStoredObject(change: StoredObjectChange): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#appender.appendStoredObject(change);
  }

  async loadStoredObjects(limit: number): Promise<StoredObject[]> {
    this.#readable();
    return this.#writer.storedObjects.newest(limit);
  }

  async flush(): Promise<void> {
    this.#appender.flushAll();
  }

  async get(requestId: string): Promise<LogRecord | undefined> {
    this.#readable();
    return findLogRecord(this.#source, this.#bodies, requestId, () => this.#closed);
  }

  async list(filter: LogFilter, page: LogPage): Promise<LogPageResult> {
    this.#readable();
    return listLogs(this.#source, filter, page);
  }

  async usage(query: UsageQuery): Promise<UsageRow[]> {
    this.#readable();
    return readUsage(this.#prepare, this.#source, query);
  }

  async statistics(query: StatisticsQuery): Promise<Statistics> {
    this.#readable();
    return readStatistics(this.#prepare, this.#source, query);
  }

  async keyUsage(accessKeyId: number, from?: number, to?: number): Promise<KeyUsage> {
    this.#readable();
    return readKeyUsage(this.#prepare, this.#source, accessKeyId, from, to);
  }

  async namedIds(): Promise<NamedIds> {
    this.#readable();
    return readNamedIds(this.#prepare);
  }

  /** One transaction per few batches (about 2 000 records), yielding in between. */
  async prune(before: number): Promise<number> {
    this.#readable();
    let deleted = 0;
    for (;;) {
      const step = this.#pruner.step(before);
      if (step === undefined) break;
      deleted += step;
      await new Promise((resolve) => setImmediate(resolve));
      // A close in between ends it; the rest goes at the next prune.
      if (this.#closed) return deleted;
    }
    this.#pruner.finish(before);
    return deleted;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#appender.flushAll(true);
    this.#db.pragma('wal_checkpoint(TRUNCATE)');
    this.#db.close();
  }

  /** Runs the setup of a new store; should it throw, the database is closed, not left open by a store nobody holds. */
  #opened<T>(setUp: () => T): T {
    try {
      return setUp();
    } catch (error) {
      this.#db.close();
      throw error;
    }
  }

  /**
   * Fails the write once the database file was removed or replaced (at most one stat a second):
   * the write would go to a file nobody can open again, and be acknowledged. It stays failed, so
   * the records wait as for any failed write; a restart creates the file again.
   */
  #checkFile(): void {
    if (this.#fileGone !== undefined) throw this.#fileGone;
    const now = Date.now();
    if (now - this.#fileCheckedAt < FILE_CHECK_MS) return;
    this.#fileCheckedAt = now;
    const current = statSync(this.#path, { throwIfNoEntry: false });
    if (current !== undefined && current.dev === this.#file.dev && current.ino === this.#file.ino) return;
    this.#fileGone = new Error(`${LOG_DB_FILE} was removed or replaced; restart the gateway to recreate it`);
    throw this.#fileGone;
  }

  #readable(): void {
    if (this.#closed) throw new Error('log store is closed');
    this.#appender.flushAll();
  }
}

/**
 * Throws SQLITE_READONLY unless the file can be written. A file SQLite could open only for
 * reading (another user's, a read-only one) opens, reads and even begins a write transaction in WAL
 * mode; only writing a page fails. So a page is written (user_version, unchanged) and rolled back.
 */
function proveWritable(db: Database.Database): void {
  const version = Number(db.pragma('user_version', { simple: true }));
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    // Another program holds the write lock (a sqlite3 shell in a transaction): the file is
    // writable, and the writer retries its batches until the lock is gone (log-writer-worker.ts).
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return;
    throw error;
  }
  try {
    db.pragma(`user_version = ${version}`);
  } finally {
    if (db.inTransaction) db.exec('ROLLBACK');
  }
}

export function openSqliteLogStore(dataDir: string, options: SqliteLogStoreOptions = {}): SqliteLogStore {
  return new SqliteLogStore(dataDir, options);
}
