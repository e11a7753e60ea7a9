import { addCost, withRoundedCost } from '../../usage/index.ts';
import { InvalidLogCursorError } from '../logs/invalid-log-cursor.ts';
import { isErrorRecord } from '../logs/error-record.ts';
import { wellFormedFilter, wellFormedStrings } from '../logs/well-formed-text.ts';
import type { LogListItem, LogRecord } from '../logs/log-record.ts';
import { MemoryStoredObjects } from './memory-stored-objects.ts';
import type { KeyUsage, LogFilter, LogPage, LogPageResult, LogStore, Statistics, StatisticsQuery, UsageQuery, UsageRow, UsageTotals } from '../logs/log-store.ts';

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;
const HOUR_MS = BUCKET_MS.hour;

/**
 * The log store interface kept in memory: for a gateway run without persistence of logs,
 * and as a real second implementation to exercise the management routes with.
 */
export class MemoryLogStore implements LogStore {
  readonly storedObjects = new MemoryStoredObjects();
  #records: LogRecord[] = [];
  /** What pruned records of each AccessKey used, per UTC hour, which its quotas still count. */
  readonly #pruned = new Map<number, Map<number, KeyUsage>>();

  append(record: LogRecord): void {
    this.#records.push(wellFormedStrings(structuredClone(record)));
  }

  async get(requestId: string): Promise<LogRecord | undefined> {
    const r = this.#records.find((x) => x.request_id === requestId);
    return r && structuredClone(r);
  }

  async list(filter: LogFilter, page: LogPage): Promise<LogPageResult> {
    const limit = Math.min(500, Math.max(1, Math.trunc(page.limit)));
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
    if (page.cursor !== undefined && after === undefined) throw new InvalidLogCursorError();
    const sorted = this.#matching(filter).sort(newestFirst);
    const start = after === undefined ? 0 : sorted.findIndex((r) => newestFirst(r, after) > 0);
    const slice = start < 0 ? [] : sorted.slice(start, start + limit + 1);
    const items = slice.slice(0, limit).map(toListItem);
    const last = items[items.length - 1];
    return { items, next_cursor: slice.length > limit && last ? encodeCursor(last) : null };
  }

  async usage(query: UsageQuery): Promise<UsageRow[]> {
    const width = BUCKET_MS[query.bucket];
    const offset = (query.utc_offset_minutes ?? 0) * 60_000;
    const rows = new Map<string, UsageRow>();
    const filter: LogFilter = { from: query.from, to: query.to, access_key_id: query.access_key_id, group_id: query.group_id, model: query.model };
    for (const r of this.#matching(filter)) {
      const bucket_start = Math.floor((r.created_at + offset) / width) * width - offset;
      const row: UsageRow = { bucket_start, ...emptyTotals() };
      if (query.group_by.includes('key')) row.access_key_id = r.access_key_id;
      if (query.group_by.includes('group')) row.group_id = r.group_id;
      if (query.group_by.includes('model')) row.model = r.external_model;
      const id = JSON.stringify([bucket_start, row.access_key_id, row.group_id, row.model]);
      addTo(rows.get(id) ?? rows.set(id, row).get(id)!, r);
    }
    return [...rows.values()].sort((a, b) => a.bucket_start - b.bucket_start);
  }

  async statistics(query: StatisticsQuery): Promise<Statistics> {
    const records = this.#matching({ from: query.from, to: query.to, access_key_id: query.access_key_id });
    const totals = emptyTotals();
    const byModel = new Map<string | null, UsageTotals>();
    const by_status_class = { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
    let duration = 0;
    let ttfb = 0;
    let ttfbCount = 0;
    let client_aborted = 0;
    for (const r of records) {
      addTo(totals, r);
      addTo(byModel.get(r.external_model) ?? byModel.set(r.external_model, emptyTotals()).get(r.external_model)!, r);
      const cls = `${Math.min(5, Math.max(1, Math.floor(r.status / 100)))}xx` as keyof typeof by_status_class;
      by_status_class[cls]++;
      duration += r.timings.duration_ms;
      if (r.timings.ttfb_ms !== null) {
        ttfb += r.timings.ttfb_ms;
        ttfbCount++;
      }
      if (r.client_aborted) client_aborted++;
    }
    const top_models = [...byModel.entries()]
      .map(([model, t]) => ({ model, ...t }))
      .sort((a, b) => b.requests - a.requests || String(a.model).localeCompare(String(b.model)))
      .slice(0, query.top ?? 5);
    return {
      ...totals,
      error_rate: totals.requests === 0 ? 0 : totals.errors / totals.requests,
      client_aborted,
      avg_duration_ms: records.length === 0 ? 0 : duration / records.length,
      avg_ttfb_ms: ttfbCount === 0 ? 0 : ttfb / ttfbCount,
      by_status_class,
      top_models,
    };
  }

  async keyUsage(accessKeyId: number, from?: number, to?: number): Promise<KeyUsage> {
    const usage = noKeyUsage();
    for (const r of this.#matching({ access_key_id: accessKeyId, from, to })) addKeyUsage(usage, r);
    for (const [hour, pruned] of this.#pruned.get(accessKeyId) ?? []) {
      if ((from !== undefined && hour < from) || (to !== undefined && hour >= to)) continue;
      usage.requests += pruned.requests;
      usage.tokens += pruned.tokens;
      usage.cost = addCost(usage.cost, pruned.cost);
    }
    // As the SQLite reader: costs are whole 1e-10 USD, and a sum is rounded to them.
    return withRoundedCost(usage);
  }

  async prune(before: number): Promise<number> {
    const kept: LogRecord[] = [];
    for (const r of this.#records) {
      if (r.created_at >= before) kept.push(r);
      else if (r.access_key_id !== null) addKeyUsage(this.#prunedHour(r.access_key_id, r.created_at), r);
    }
    const deleted = this.#records.length - kept.length;
    this.#records = kept;
    return deleted;
  }

  #prunedHour(accessKeyId: number, at: number): KeyUsage {
    let hours = this.#pruned.get(accessKeyId);
    if (hours === undefined) this.#pruned.set(accessKeyId, (hours = new Map()));
    const hour = at - (at % HOUR_MS);
    let usage = hours.get(hour);
    if (usage === undefined) hours.set(hour, (usage = noKeyUsage()));
    return usage;
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {}

  #matching(filter: LogFilter): LogRecord[] {
    const f = wellFormedFilter(filter);
    return this.#records.filter(
      (r) =>
        (f.from === undefined || r.created_at >= f.from) &&
        (f.to === undefined || r.created_at < f.to) &&
        (f.access_key_id === undefined || r.access_key_id === f.access_key_id) &&
        (f.group_id === undefined || r.group_id === f.group_id) &&
        (f.model === undefined || r.external_model === f.model) &&
        (f.status === undefined || r.status === f.status) &&
        (f.error_code === undefined || r.error_code === f.error_code) &&
        (f.status_class === undefined || matchesClass(r, f.status_class)),
    );
  }
}

function matchesClass(r: Pick<LogRecord, 'status' | 'error_code'>, cls: NonNullable<LogFilter['status_class']>): boolean {
  return cls === 'error' ? isErrorRecord(r.status, r.error_code) : Math.floor(r.status / 100) === Number(cls[0]);
}

function newestFirst(a: Pick<LogRecord, 'created_at' | 'request_id'>, b: Pick<LogRecord, 'created_at' | 'request_id'>): number {
  return b.created_at - a.created_at || (a.request_id < b.request_id ? 1 : a.request_id > b.request_id ? -1 : 0);
}

function toListItem(r: LogRecord): LogListItem {
  const { request_body, ...rest } = structuredClone(r);
  return { ...rest, has_request_body: request_body !== undefined };
}

function encodeCursor(r: Pick<LogRecord, 'created_at' | 'request_id'>): string {
  return Buffer.from(JSON.stringify([r.created_at, r.request_id])).toString('base64url');
}

/**
 * Undefined for anything this store did not issue: only text that `encodeCursor` gives back
 * exactly (as log-cursor.ts, whose created_at.seq form does not fit this store's order by
 * request_id), so other spellings of the same bytes, floats and numbers past the safe integers
 * (rounded, or Infinity from 1e400) are refused.
 */
function decodeCursor(cursor: string): Pick<LogRecord, 'created_at' | 'request_id'> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [created_at, request_id] = value as unknown[];
  if (!Number.isSafeInteger(created_at) || typeof request_id !== 'string') return undefined;
  const after = { created_at: created_at as number, request_id };
  return encodeCursor(after) === cursor ? after : undefined;
}

function emptyTotals(): UsageTotals {
  return { requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost: 0 };
}

function addTo(t: UsageTotals, r: LogRecord): void {
  t.requests++;
  if (isErrorRecord(r.status, r.error_code)) t.errors++;
  t.input_tokens += r.usage.input_tokens;
  t.output_tokens += r.usage.output_tokens;
  t.cached_tokens += r.usage.cached_tokens;
  t.reasoning_tokens += r.usage.reasoning_tokens;
  t.cost = addCost(t.cost, r.cost);
}

function noKeyUsage(): KeyUsage {
  return { requests: 0, tokens: 0, cost: 0 };
}

function addKeyUsage(usage: KeyUsage, r: LogRecord): void {
  if (r.attempt_count > 0) usage.requests += 1;
  usage.tokens += r.usage.input_tokens + r.usage.output_tokens;
  usage.cost = addCost(usage.cost, r.cost);
}
