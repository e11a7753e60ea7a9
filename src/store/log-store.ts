import type { LogStore } from './logs/log-store.ts';

/**
 * What the management plane reads from the request-log and usage store. The embedded
 * implementation lives in src/store/logs; src/store/memory has an in-memory one.
 */
export type LogReader = Pick<LogStore, 'list' | 'get' | 'usage' | 'statistics' | 'keyUsage'>;

export { InvalidLogCursorError } from './logs/invalid-log-cursor.ts';
export type { KeyUsage, LogFilter, LogPage, LogPageResult, Statistics, StatisticsQuery, UsageQuery, UsageRow } from './logs/log-store.ts';
export type { LogListItem, LogRecord } from './logs/log-record.ts';
