export type {
  AttemptRecord,
  EffectiveMode,
  JsonValue,
  LogListItem,
  LogRecord,
  RecordedRequestBody,
  RequestTimings,
  RouteMode,
} from './log-record.ts';
export type {
  LogFilter,
  LogPage,
  LogPageResult,
  LogStore,
  ModelStatistics,
  Statistics,
  StatisticsQuery,
  StatusClass,
  UsageDimension,
  UsageQuery,
  UsageRow,
  UsageTotals,
} from './log-store.ts';
export { InvalidLogCursorError } from './invalid-log-cursor.ts';
export { LOG_DB_FILE, SqliteLogStore, openSqliteLogStore } from './sqlite-log-store.ts';
export type { SqliteLogStoreOptions } from './sqlite-log-store.ts';
export { WorkerLogStore, openWorkerLogStore } from './worker-log-store.ts';
export type { WorkerLogStoreOptions } from './worker-log-store.ts';
