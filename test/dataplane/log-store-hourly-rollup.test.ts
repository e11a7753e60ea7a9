import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import Database from 'better-sqlite3';
import { openSqliteLogStore, type LogRecord, type LogStore, type UsageDimension, type UsageQuery, type UsageRow } from '../../src/store/logs/index.ts';
import { openSqliteLogReader } from '../../src/store/logs/sqlite-log-reader.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { seededRandom as random, type SeededRandom as Random } from '../helpers/seeded-random.ts';

// usage_rollup_hour answers the whole hours of long ranges: every read must give what summing
// the records gives (MemoryLogStore), over days of records, ranges on and off the hour and the
// minute, and offsets whose day boundaries cut an hour (330, -570) or not. Costs are whole
// multiples of 2^-10, so that every sum is exact, and on the 1e-10 USD grid of real costs
// (0.0009765625 each), which the rollups' cost sums are rounded to: the answers are compared as they are.

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const BASE = Date.UTC(2025, 2, 9, 0, 0, 0);
const SPAN = 5 * DAY;
const OFFSETS = [0, 60, 330, -570, -150, 45, 1770];
const GROUP_BYS: UsageDimension[][] = [[], ['key'], ['group'], ['model'], ['key', 'group'], ['key', 'model'], ['group', 'model'], ['key', 'group', 'model'], ['model', 'group', 'key']];


function record(r: Random, i: number, created_at: number): LogRecord {
  const status = r.pick([200, 200, 200, 201, 400, 429, 500, 502]);
  return {
    request_id: `hr-${i}`,
    created_at,
    access_key_id: r.pick([1, 2, 3, null]),
    group_id: r.pick(['g1', 'g2', null]),
    channel: 'ch',
    credential_id: 'c1',
    protocol: 'x-completions',
    operation: 'chat-completions',
    route_mode: 'N',
    effective: 'native',
    external_model: r.pick(['m-a', 'm-b', 'm-c', null]),
    upstream_model: 'up',
    status,
    error_code: status >= 400 ? 'upstream_error' : r.chance(0.1) ? 'upstream_stream_broken' : null,
    attempt_count: r.int(0, 2),
    attempts: [],
    client_aborted: r.chance(0.1),
    timings: { started_at: created_at, ttfb_ms: r.chance(0.2) ? null : r.int(0, 900), duration_ms: r.int(0, 3000) },
    usage: { input_tokens: r.int(0, 5000), output_tokens: r.int(0, 2000), cached_tokens: r.int(0, 100), reasoning_tokens: r.int(0, 50) },
    cost: r.int(0, 1 << 10) / (1 << 10),
    currency: 'USD',
  };
}

/** A time in the span and a little around it: anywhere, on a minute, on an hour, or on a day. */
function randomTime(r: Random): number {
  const at = BASE + r.int(-2 * HOUR, SPAN + 2 * HOUR);
  const kind = r.int(0, 4);
  return kind === 0 ? at - (at % MINUTE) : kind === 1 ? at - (at % HOUR) : kind === 2 ? at - (at % DAY) : at;
}

function randomRange(r: Random): { from?: number; to?: number } {
  const a = randomTime(r);
  const b = randomTime(r);
  const [from, to] = a <= b ? [a, b] : [b, a];
  const which = r.int(0, 5);
  return which === 0 ? {} : which === 1 ? { from } : which === 2 ? { to } : { from, to };
}

const compareValues = (a: unknown, b: unknown): number => (a === b ? 0 : a === null || a === undefined ? -1 : b === null || b === undefined ? 1 : a < b ? -1 : 1);
const canonical = (rows: UsageRow[]): UsageRow[] =>
  [...rows].sort((a, b) => a.bucket_start - b.bucket_start || compareValues(a.access_key_id, b.access_key_id) || compareValues(a.group_id, b.group_id) || compareValues(a.model, b.model));

/** Usage of every bucket, offset and group_by over random ranges and filters, statistics and keyUsage: as the records sum them. */
async function compareReads(t: Test, r: Random, store: Pick<LogStore, 'usage' | 'statistics' | 'keyUsage'>, reference: MemoryLogStore, label: string): Promise<void> {
  let failures = 0;
  const check = (ok: boolean, what: string, details: unknown) => {
    if (ok) return;
    if (++failures <= 3) t.fail(`${label}: ${what}`, { details });
  };
  let reads = 0;
  for (const utc_offset_minutes of OFFSETS) {
    for (const group_by of GROUP_BYS) {
      for (const bucket of ['hour', 'day'] as const) {
        for (let n = 0; n < 2; n++) {
          const query: UsageQuery = { ...randomRange(r), bucket, group_by, utc_offset_minutes };
          if (r.chance(0.3)) Object.assign(query, r.pick([{ access_key_id: r.pick([1, 2]) }, { group_id: 'g2' }, { model: r.pick(['m-a', 'nope']) }]));
          const [got, want] = [await store.usage(query), await reference.usage(query)];
          check(isDeepStrictEqual(canonical(got), canonical(want)), 'usage', { query, got: got.length, want: want.length });
          reads++;
        }
      }
    }
  }
  for (let n = 0; n < 20; n++) {
    const query = { ...randomRange(r), ...(r.chance(0.4) ? { access_key_id: r.pick([1, 2, 3]) } : {}), top: 100 };
    const [got, want] = [await store.statistics(query), await reference.statistics(query)];
    const sorted = (s: typeof got) => ({ ...s, top_models: [...s.top_models].sort((a, b) => compareValues(a.model, b.model)) });
    check(isDeepStrictEqual(sorted(got), sorted(want)), 'statistics', { query, got, want });
  }
  for (const key of [1, 2, 3]) {
    for (let n = 0; n < 6; n++) {
      const { from, to } = randomRange(r);
      check(isDeepStrictEqual(await store.keyUsage(key, from, to), await reference.keyUsage(key, from, to)), 'keyUsage', { key, from, to });
    }
  }
  if (failures === 0) t.pass(`${label}: ${reads} usage reads, statistics and keyUsage agree with the records`);
}

/** usage_rollup_hour holds exactly the minute rollup's rows summed per UTC hour. */
function checkHourlyInStep(t: Test, dir: string, label: string): void {
  const db = new Database(join(dir, 'logs.sqlite'), { readonly: true });
  try {
    const columns = 'access_key_id, group_id, external_model, SUM(requests), SUM(errors), SUM(forwarded), SUM(input_tokens), SUM(output_tokens), SUM(cost), SUM(ttfb_count), SUM(s5xx)';
    const fromMinutes = `SELECT slot_start - slot_start % ${HOUR} AS hour, ${columns} FROM usage_rollup GROUP BY hour, access_key_id, group_id, external_model`;
    const fromHours = `SELECT slot_start AS hour, ${columns} FROM usage_rollup_hour GROUP BY hour, access_key_id, group_id, external_model`;
    const missing = db.prepare(`${fromMinutes} EXCEPT ${fromHours}`).all();
    const extra = db.prepare(`${fromHours} EXCEPT ${fromMinutes}`).all();
    const duplicated = db.prepare('SELECT COUNT(*) FROM (SELECT 1 FROM usage_rollup_hour GROUP BY slot_start, access_key_id, group_id, external_model HAVING COUNT(*) > 1)').pluck().get();
    const hours = db.prepare('SELECT COUNT(*) FROM usage_rollup_hour').pluck().get() as number;
    t.ok(missing.length === 0 && extra.length === 0 && duplicated === 0 && hours > 0, `${label}: the hourly rollup is the minute rollup summed per hour (${hours} rows)`, { missing: missing.slice(0, 3), extra: extra.slice(0, 3), duplicated });
  } finally {
    db.close();
  }
}

t.test('usage, statistics and keyUsage over days read the hourly rollup and still sum what the records do', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-hourly-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = random(2026);
  const open = () => openSqliteLogStore(dir, { batchSize: 97, flushIntervalMs: 60_000 });
  let store = await open();
  const reference = new MemoryLogStore();
  const taken = new Set<number>();
  let i = 0;
  const append = (n: number, from: number, span: number) => {
    const made: LogRecord[] = [];
    for (let k = 0; k < n; k++) {
      let at = from + r.int(0, span - 1);
      while (taken.has(at)) at++;
      taken.add(at);
      made.push(record(r, i++, at));
    }
    // Batches overlap in time, as requests complete out of order.
    for (const rec of made.sort(() => r.next() - 0.5)) {
      store.append(rec);
      reference.append(rec);
    }
  };
  append(2500, BASE, SPAN);
  // A busy hour: many records per minute and combination.
  append(800, BASE + 2 * DAY + 5 * HOUR, HOUR);
  await store.flush();
  checkHourlyInStep(t, dir, 'after appends');
  await compareReads(t, r, store, reference, 'after appends');

  const cut = BASE + DAY + 7 * HOUR + 23 * MINUTE + 4_321;
  t.equal(await store.prune(cut), await reference.prune(cut), 'a prune off the minute deletes as many records');
  checkHourlyInStep(t, dir, 'after a prune off the minute');
  append(300, cut - HOUR, 3 * HOUR);
  await store.flush();
  const onHour = BASE + 2 * DAY;
  t.equal(await store.prune(onHour), await reference.prune(onHour), 'a prune on an hour deletes as many records');
  await store.flush();
  checkHourlyInStep(t, dir, 'after more appends and a prune on the hour');
  await compareReads(t, r, store, reference, 'after prunes');
  await store.close();

  // A file from before the hourly rollup: it is summed from the minute rollup at open.
  const old = new Database(join(dir, 'logs.sqlite'));
  old.exec('DROP TABLE usage_rollup_hour');
  old.close();
  const reader = openSqliteLogReader(dir)!;
  await compareReads(t, r, reader, reference, 'read-only, a file without the hourly rollup');
  reader.close();
  store = await open();
  checkHourlyInStep(t, dir, 'opened without the hourly rollup');
  await compareReads(t, r, store, reference, 'opened without the hourly rollup');
  await store.close();

  // A file of an older LOG_SCHEMA_VERSION: both rollups are rebuilt from the batches.
  const older = new Database(join(dir, 'logs.sqlite'));
  older.exec('DELETE FROM usage_rollup_hour WHERE rowid % 3 = 0');
  older.pragma('user_version = 0');
  older.close();
  store = await open();
  t.teardown(() => store.close());
  checkHourlyInStep(t, dir, 'rebuilt');
  await compareReads(t, r, store, reference, 'rebuilt');
});

t.test('a read over days takes its whole hours from usage_rollup_hour, and only those', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-hourly-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = random(7);
  const store = openSqliteLogStore(dir, { batchSize: 97, flushIntervalMs: 60_000 });
  for (let i = 0; i < 200; i++) store.append(record(r, i, BASE + i * 30 * MINUTE + 17_000));
  await store.close();
  const totalOf = (rows: UsageRow[]) => rows.reduce((n, row) => n + row.requests, 0);
  const read = async (query: UsageQuery) => {
    const reader = openSqliteLogReader(dir)!;
    try {
      return totalOf(await reader.usage(query));
    } finally {
      reader.close();
    }
  };
  const days: UsageQuery = { from: BASE, to: BASE + 5 * DAY, bucket: 'day', group_by: [] };
  // Within one hour: no whole hour, read by the minute.
  const inHour: UsageQuery = { from: BASE + 2 * HOUR + MINUTE, to: BASE + 3 * HOUR - MINUTE, bucket: 'hour', group_by: [] };
  const [daysBefore, inHourBefore] = [await read(days), await read(inHour)];
  t.equal(daysBefore, 200, 'every record counted once');
  // Marks every hour row: a read that takes its hours there counts the marks.
  const db = new Database(join(dir, 'logs.sqlite'));
  const hourRows = db.prepare('UPDATE usage_rollup_hour SET requests = requests + 1000').run().changes;
  db.close();
  t.ok(hourRows > 0);
  t.equal(await read(days), daysBefore + 1000 * hourRows, 'the days are read from the hour rows');
  t.equal(await read(inHour), inHourBefore, 'a range inside an hour is read by the minute');
});
