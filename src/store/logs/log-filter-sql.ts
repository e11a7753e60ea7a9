import type { LogFilter, StatusClass } from './log-store.ts';

export interface SqlWhere {
  sql: string;
  params: Array<string | number>;
}

const STATUS_CLASS_RANGE: Readonly<Record<StatusClass, readonly [number, number]>> = {
  '1xx': [100, 200],
  '2xx': [200, 300],
  '3xx': [300, 400],
  '4xx': [400, 500],
  '5xx': [500, 600],
  error: [400, 1000],
};

/** WHERE clause (with leading ' WHERE ', or empty) for a log filter. */
export function logFilterSql(filter: LogFilter, extra: SqlWhere[] = []): SqlWhere {
  const clauses: string[] = [];
  const params: Array<string | number> = [];
  if (filter.from !== undefined) {
    clauses.push('created_at >= ?');
    params.push(filter.from);
  }
  if (filter.to !== undefined) {
    clauses.push('created_at < ?');
    params.push(filter.to);
  }
  if (filter.access_key_id !== undefined) {
    clauses.push('access_key_id = ?');
    params.push(filter.access_key_id);
  }
  if (filter.group_id !== undefined) {
    clauses.push('group_id = ?');
    params.push(filter.group_id);
  }
  if (filter.model !== undefined) {
    clauses.push('external_model = ?');
    params.push(filter.model);
  }
  if (filter.status !== undefined) {
    clauses.push('status = ?');
    params.push(filter.status);
  }
  if (filter.status_class !== undefined) {
    const [low, high] = STATUS_CLASS_RANGE[filter.status_class];
    clauses.push('status >= ? AND status < ?');
    params.push(low, high);
  }
  for (const e of extra) {
    clauses.push(e.sql);
    params.push(...e.params);
  }
  return { sql: clauses.length > 0 ? ` WHERE ${clauses.join(' AND ')}` : '', params };
}
