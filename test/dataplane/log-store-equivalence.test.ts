import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { newRequestId } from '../../src/dataplane/new-request-id.ts';
import { openSqliteLogStore, openWorkerLogStore, type LogFilter, type LogListItem, type LogRecord, type LogStore, type UsageDimension, type UsageRow } from '../../src/store/logs/index.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { seededRandom as random, type SeededRandom as Random } from '../helpers/seeded-random.ts';

// The SQLite stores against MemoryLogStore, the behavioural reference, on the same random
// records: every read compared after appends (in completion order, so that batches overlap in
// time), after prunes that cut batches and minutes, and after more appends into pruned time.

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** Two hours before midnight UTC, so that days and local days (offsets 330, -480) are cut inside the span. */
const BASE = Date.UTC(2025, 2, 9, 22, 0, 0) + 17_123;
const SPAN = 3 * HOUR;
const KEYS = [1, 2, 3, null];
// A lone surrogate (a client may send `\ud800` in JSON) is stored as U+FFFD by every store.
const GROUPS = ['g1', 'g2', 'g-ü', 'g\ud800', null];
const MODELS = ['m-a', 'm-b', 'model-c', 'm\udc00x', null];
const STATUSES = [200, 200, 200, 201, 101, 304, 400, 401, 429, 499, 500, 502];
const OFFSETS = [0, 330, -480, 60, -150];
const GROUP_BYS: UsageDimension[][] = [[], ['key'], ['group'], ['model'], ['key', 'group'], ['key', 'model'], ['group', 'model'], ['key', 'group', 'model'], ['model', 'key'], ['group', 'group']];


/** Records with distinct created_at, in the order they complete: a tenth are long streams that complete up to 40 minutes after they start. */
function randomRecords(r: Random, n: number, from: number, span: number, taken: Set<number>, prefix: string): LogRecord[] {
  const made: Array<{ record: LogRecord; done: number }> = [];
  for (let i = 0; i < n; i++) {
    let created_at = from + r.int(0, span - 1);
    while (taken.has(created_at)) created_at++;
    taken.add(created_at);
    const attempts = Array.from({ length: r.int(0, 2) }, () => ({ credential_id: r.pick(['c1', 'c2', null]), group_id: r.pick(GROUPS), status: r.pick([200, 429, null]), error_code: r.pick([null, 'upstream_rate_limited']) }));
    const status = r.pick(STATUSES);
    const duration_ms = r.chance(0.1) ? r.int(60_000, 40 * MINUTE) : r.int(0, 3000);
    const record: LogRecord = {
      request_id: r.chance(0.5) ? newRequestId(created_at) : `${prefix}-${i}`,
      created_at,
      access_key_id: r.pick(KEYS),
      group_id: r.pick(GROUPS),
      channel: r.pick(['ch02', null]),
      credential_id: r.pick(['c1', 'c2', null]),
      protocol: r.pick(['x-completions', 'x-messages']),
      operation: 'chat-completions',
      route_mode: r.pick(['N', 'C', null]),
      effective: r.pick(['native', 'converted', null]),
      external_model: r.pick(MODELS),
      upstream_model: r.pick(['up-1', null]),
      status,
      // Below 400: a stream that failed after its answer began, or one its client ended (no error).
      error_code: status >= 400 ? r.pick(['upstream_error', 'quota_exceeded']) : r.chance(0.2) ? r.pick(['upstream_stream_broken', 'client_closed', 'client_stalled']) : null,
      attempt_count: attempts.length,
      attempts,
      client_aborted: r.chance(0.1),
      timings: { started_at: created_at, ttfb_ms: r.chance(0.2) ? null : r.int(0, 900), duration_ms },
      usage: { input_tokens: r.int(0, 5000), output_tokens: r.int(0, 2000), cached_tokens: r.int(0, 100), reasoning_tokens: r.int(0, 50) },
      cost: r.next() * 0.01,
      currency: 'USD',
    };
    if (r.chance(0.05)) record.request_body = { state: 'recorded', original_bytes: r.int(1, 100), body: { n: i, text: 'é' } };
    made.push({ record, done: created_at + duration_ms });
  }
  return made.sort((a, b) => a.done - b.done).map((m) => m.record);
}

/** A time in the span, on a minute, an hour or anywhere. */
function randomTime(r: Random): number {
  const at = BASE + r.int(-10 * MINUTE, SPAN + 10 * MINUTE);
  const kind = r.int(0, 3);
  return kind === 0 ? at - (at % MINUTE) : kind === 1 ? at - (at % HOUR) : at;
}

function randomRange(r: Random): { from?: number; to?: number } {
  const a = randomTime(r);
  const b = randomTime(r);
  const [from, to] = a <= b ? [a, b] : [b, a];
  const which = r.int(0, 4);
  return which === 0 ? {} : which === 1 ? { from } : which === 2 ? { to } : { from, to };
}

function randomFilter(r: Random): LogFilter {
  const filter: LogFilter = randomRange(r);
  if (r.chance(0.3)) filter.access_key_id = r.pick([1, 2, 3, 99]);
  if (r.chance(0.3)) filter.group_id = r.pick(['g1', 'g2', 'g-ü', 'g\ud800', 'nope']);
  if (r.chance(0.3)) filter.model = r.pick(['m-a', 'm-b', 'model-c', 'm\udc00x', 'nope']);
  if (r.chance(0.15)) filter.status = r.pick(STATUSES);
  else if (r.chance(0.2)) filter.status_class = r.pick(['1xx', '2xx', '3xx', '4xx', '5xx', 'error'] as const);
  if (r.chance(0.15)) filter.error_code = r.pick(['upstream_stream_broken', 'client_closed', 'quota_exceeded', 'nope']);
  return filter;
}

/** Numbers to 12 significant digits: float sums (cost, averages) added in another order differ in the last bits. */
function rounded<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (typeof v === 'number' ? Number(v.toPrecision(12)) : v))) as T;
}

/** The ids of every page, and every item. */
async function allPages(store: LogStore, filter: LogFilter, limit: number): Promise<{ pages: string[][]; items: LogListItem[] }> {
  const pages: string[][] = [];
  const items: LogListItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list(filter, cursor === undefined ? { limit } : { limit, cursor });
    pages.push(page.items.map((item) => item.request_id));
    items.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined && pages.length < 1000);
  return { pages, items };
}

const DIMENSION_FIELD = { key: 'access_key_id', group: 'group_id', model: 'model' } as const;

/** SQLite's ORDER BY, written independently of the store: NULL, then numbers, then text by UTF-8 bytes. */
function sqliteOrder(a: unknown, b: unknown): number {
  const rank = (v: unknown) => (v === null || v === undefined ? 0 : typeof v === 'number' ? 1 : 2);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  return 0;
}

function canonicalUsage(rows: UsageRow[]): UsageRow[] {
  return rounded(rows).sort((a, b) => a.bucket_start - b.bucket_start || sqliteOrder(a.access_key_id, b.access_key_id) || sqliteOrder(a.group_id, b.group_id) || sqliteOrder(a.model, b.model));
}

/** Every read of both stores, compared; `label` says which phase. */
async function compare(t: Test, r: Random, store: LogStore, reference: MemoryLogStore, label: string): Promise<void> {
  let failures = 0;
  const check = (ok: boolean, what: string, details: unknown) => {
    if (ok) return;
    failures++;
    if (failures <= 5) t.fail(`${label}: ${what}`, { details });
  };
  const same = (a: unknown, b: unknown) => isDeepStrictEqual(a, b);

  for (let n = 0; n < 30; n++) {
    const filter = randomFilter(r);
    const limit = r.pick([1, 3, 7, 50, 500]);
    const [got, want] = [await allPages(store, filter, limit), await allPages(reference, filter, limit)];
    check(same(got.pages, want.pages), 'list pages', { filter, limit, got: got.pages, want: want.pages });
    check(same(got.items, want.items), 'list items', { filter, limit });
  }

  for (const group_by of GROUP_BYS) {
    for (const bucket of ['hour', 'day'] as const) {
      const query = { ...randomRange(r), bucket, group_by, utc_offset_minutes: r.pick(OFFSETS) };
      if (r.chance(0.3)) Object.assign(query, r.pick([{ access_key_id: r.pick([1, 2, 99]) }, { group_id: r.pick(['g1', 'g-ü', 'g\ud800']) }, { model: r.pick(['m-a', 'm\udc00x', 'nope']) }]));
      const got = await store.usage(query);
      const want = await reference.usage(query);
      check(same(canonicalUsage(got), canonicalUsage(want)), 'usage', { query, got: rounded(got), want: rounded(want) });
      const ordered = got.every((row, i) => {
        const prev = got[i - 1];
        if (prev === undefined) return true;
        if (prev.bucket_start !== row.bucket_start) return prev.bucket_start < row.bucket_start;
        for (const d of [...new Set(group_by)]) {
          const order = sqliteOrder(prev[DIMENSION_FIELD[d]], row[DIMENSION_FIELD[d]]);
          if (order !== 0) return order < 0;
        }
        return false;
      });
      check(ordered, 'usage rows ordered by bucket, then the dimensions in group_by order', { query, got });
      for (const row of got) check(group_by.every((d) => DIMENSION_FIELD[d] in row) && Object.keys(row).length === 8 + new Set(group_by).size, 'usage rows carry only the requested dimensions', row);
    }
  }

  for (let n = 0; n < 12; n++) {
    const query = { ...randomRange(r), ...(r.chance(0.4) ? { access_key_id: r.pick([1, 2, 3, 99]) } : {}) };
    const got = await store.statistics({ ...query, top: 100 });
    const want = await reference.statistics({ ...query, top: 100 });
    const canonical = (s: typeof got) => rounded({ ...s, top_models: [...s.top_models].sort((a, b) => sqliteOrder(a.model, b.model)) });
    check(same(canonical(got), canonical(want)), 'statistics', { query, got: canonical(got), want: canonical(want) });
    check(got.top_models.every((m, i) => i === 0 || got.top_models[i - 1]!.requests > m.requests || (got.top_models[i - 1]!.requests === m.requests && sqliteOrder(got.top_models[i - 1]!.model, m.model) < 0)), 'top models by requests, then model', got.top_models);
    const top2 = await store.statistics({ ...query, top: 2 });
    check(same(top2.top_models, got.top_models.slice(0, 2)), 'top: 2 is the first two', top2.top_models);
  }

  for (const key of [1, 2, 3, 99]) {
    for (const from of [undefined, BASE - (BASE % HOUR), BASE - (BASE % HOUR) + 2 * HOUR, randomTime(r)]) {
      check(same(rounded(await store.keyUsage(key, from)), rounded(await reference.keyUsage(key, from))), 'keyUsage', { key, from });
    }
  }
  if (failures === 0) t.pass(`${label}: every read agrees with MemoryLogStore`);
  else t.comment(`${label}: ${failures} reads differ`);
}

async function lifetimeUsage(store: LogStore): Promise<unknown> {
  return rounded(await Promise.all([1, 2, 3].map(async (key) => [await store.keyUsage(key), await store.keyUsage(key, BASE - (BASE % HOUR) + HOUR)])));
}

const IMPLEMENTATIONS = [
  { name: 'SqliteLogStore', open: async (dir: string) => openSqliteLogStore(dir, { batchSize: 37, flushIntervalMs: 60_000 }) },
  { name: 'WorkerLogStore', open: (dir: string) => openWorkerLogStore(dir, { batchSize: 37, flushIntervalMs: 60_000 }) },
];

for (const { name, open } of IMPLEMENTATIONS) {
  for (const seed of [7, 1234]) {
    t.test(`${name} reads as MemoryLogStore does (seed ${seed})`, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-equivalence-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const r = random(seed);
      const taken = new Set<number>();
      let store = await open(dir);
      const reference = new MemoryLogStore();
      const append = (records: LogRecord[]) => {
        for (const record of records) {
          store.append(record);
          reference.append(record);
        }
      };

      append(randomRecords(r, 300, BASE, SPAN, taken, 'a'));
      await compare(t, r, store, reference, 'after appends');

      const someMinute = BASE + r.int(SPAN / 3, SPAN / 2);
      const cut = someMinute - (someMinute % MINUTE) + r.int(1, MINUTE - 1);
      const before = await lifetimeUsage(store);
      t.equal(await store.prune(cut), await reference.prune(cut), 'a prune at a time off the minute deletes as many records');
      t.same(await lifetimeUsage(store), before, 'quota usage does not change with a prune');
      await compare(t, r, store, reference, 'after a prune off the minute');

      // More records, a few of them created before the cutoff (long streams that completed after the prune).
      append(randomRecords(r, 150, cut - 20 * MINUTE, SPAN - (cut - BASE) + 20 * MINUTE, taken, 'b'));
      await compare(t, r, store, reference, 'after more appends');

      const onMinute = cut + 30 * MINUTE - (cut % MINUTE);
      const again = await lifetimeUsage(store);
      t.equal(await store.prune(onMinute), await reference.prune(onMinute), 'a prune on a minute deletes as many records');
      t.same(await lifetimeUsage(store), again, 'quota usage does not change with a prune');
      await compare(t, r, store, reference, 'after a prune on the minute');

      await store.close();
      store = await open(dir);
      t.teardown(() => store.close());
      await compare(t, r, store, reference, 'reopened');
    });
  }
}
