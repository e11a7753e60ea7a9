import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { InvalidLogCursorError, openSqliteLogStore, openWorkerLogStore, type LogRecord, type LogStore, type RecordedRequestBody } from '../../src/store/logs/index.ts';
import { LOG_DB_FILE } from '../../src/store/logs/sqlite-log-store.ts';
import { newRequestId } from '../../src/dataplane/new-request-id.ts';

const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);
const HOUR = 3_600_000;

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function record(i: number, over: Partial<LogRecord> = {}): LogRecord {
  return {
    request_id: `req_${String(i).padStart(6, '0')}`,
    created_at: T0 + i * 1000,
    access_key_id: 1 + (i % 2),
    group_id: i % 3 === 0 ? 'g-a' : 'g-b',
    channel: 'ch02',
    credential_id: `cred-${i % 4}`,
    protocol: 'x-completions',
    operation: 'chat_completions',
    route_mode: 'N',
    effective: 'native',
    external_model: i % 5 === 0 ? 'big-model' : 'small-model',
    upstream_model: 'upstream-small',
    status: i % 10 === 9 ? 502 : 200,
    error_code: i % 10 === 9 ? 'upstream_error' : null,
    attempt_count: 1,
    attempts: [{ credential_id: `cred-${i % 4}`, group_id: 'g-a', status: 200, error_code: null }],
    client_aborted: false,
    timings: { started_at: T0 + i * 1000 - 50, ttfb_ms: 12, duration_ms: 40 },
    usage: { input_tokens: 100, output_tokens: 10, cached_tokens: 20, reasoning_tokens: 2 },
    cost: 0.001,
    currency: 'USD',
    ...over,
  };
}

type TestedStore = LogStore & { readonly buffered: number };

/** Both stores pass the same behavioural tests; the options mean the same (buffering before a write or a post). */
const IMPLEMENTATIONS: Array<{ name: string; open(dir: string, options?: { batchSize?: number; flushIntervalMs?: number }): Promise<TestedStore> }> = [
  { name: 'SqliteLogStore', open: async (dir, options) => openSqliteLogStore(dir, options) },
  { name: 'WorkerLogStore', open: (dir, options) => openWorkerLogStore(dir, options) },
];

for (const { name, open } of IMPLEMENTATIONS) {
  t.test(name, async (t) => {
    t.test('round trip of every field, with and without request body', async (t) => {
      const dir = tempDir(t);
      const store = await open(dir);
      t.teardown(() => store.close());
      const withBody = record(1, {
        attempt_count: 2,
        attempts: [
          { credential_id: 'cred-x', group_id: 'g-a', status: 429, error_code: 'upstream_rate_limited' },
          { credential_id: 'cred-y', group_id: 'g-b', status: 200, error_code: null },
        ],
        client_aborted: true,
        route_mode: 'N/C',
        timings: { started_at: T0, ttfb_ms: null, duration_ms: 1234 },
        request_body: { state: 'recorded', original_bytes: 42, body: { model: 'm', messages: [{ role: 'user', content: 'hé' }] } },
      });
      const textBody = record(2, { request_body: { state: 'truncated', original_bytes: 10_000_000, body: 'partial text' } });
      const plain = record(3);
      store.append(withBody);
      store.append(textBody);
      store.append(plain);
      t.equal(store.buffered, 3, 'appends are buffered');
      t.same(await store.get(withBody.request_id), withBody);
      t.same(await store.get(textBody.request_id), textBody);
      const got = await store.get(plain.request_id);
      t.same(got, plain);
      t.notOk(got && 'request_body' in got, 'no request_body when none was recorded');
      t.equal(await store.get('missing'), undefined);
      t.ok(existsSync(join(dir, 'logs.sqlite')));
    });

    t.test('filters, newest first', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      for (let i = 0; i < 100; i++) store.append(record(i));
      const ids = async (filter: Parameters<typeof store.list>[0]) =>
        (await store.list(filter, { limit: 500 })).items.map((r) => r.request_id);

      const all = await ids({});
      t.equal(all.length, 100);
      t.equal(all[0], 'req_000099', 'newest first');
      t.equal(all[99], 'req_000000');

      t.equal((await ids({ access_key_id: 2 })).length, 50);
      t.equal((await ids({ group_id: 'g-a' })).length, 34);
      t.equal((await ids({ model: 'big-model' })).length, 20);
      t.equal((await ids({ status: 502 })).length, 10);
      t.equal((await ids({ status_class: '5xx' })).length, 10);
      t.equal((await ids({ status_class: 'error' })).length, 10);
      t.equal((await ids({ status_class: '2xx' })).length, 90);
      t.same(await ids({ from: T0 + 10_000, to: T0 + 13_000 }), ['req_000012', 'req_000011', 'req_000010'], 'from inclusive, to exclusive');
      t.same(await ids({ access_key_id: 2, model: 'big-model', status_class: '2xx' }), [
        'req_000095', 'req_000085', 'req_000075', 'req_000065', 'req_000055', 'req_000045', 'req_000035', 'req_000025', 'req_000015', 'req_000005',
      ]);
      const first = (await store.list({ status: 502 }, { limit: 1 })).items[0];
      t.equal(first?.has_request_body, false);
      t.notOk(first && 'request_body' in first, 'list items carry no body');
    });

    t.test('pagination with an opaque cursor, ties on created_at included', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      for (let i = 0; i < 57; i++) store.append(record(i, { created_at: T0 + Math.floor(i / 4) * 1000 }));
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.list({}, cursor === undefined ? { limit: 10 } : { limit: 10, cursor });
        seen.push(...page.items.map((r) => r.request_id));
        cursor = page.next_cursor ?? undefined;
        pages++;
      } while (cursor !== undefined && pages < 20);
      t.equal(pages, 6);
      t.equal(seen.length, 57);
      t.equal(new Set(seen).size, 57, 'no duplicates');
      const created = await Promise.all(seen.map(async (id) => (await store.get(id))!.created_at));
      t.same(created, [...created].sort((a, b) => b - a), 'non-increasing created_at');
      await t.rejects(store.list({}, { limit: 10, cursor: 'garbage' }), InvalidLogCursorError);
    });

    t.test('list: newest first across batches that overlap in time, pages crossing batch boundaries', async (t) => {
      const store = await open(tempDir(t), { batchSize: 4, flushIntervalMs: 60_000 });
      t.teardown(() => store.close());
      // Appended in completion order: every fifth record is a long stream that started minutes
      // before the records around it, so each batch's time range overlaps older batches'; records
      // three by three share a created_at, across batch boundaries too.
      const appended: LogRecord[] = [];
      for (let i = 0; i < 41; i++) appended.push(record(i, { created_at: i % 5 === 4 ? T0 - (41 - i) * 60_000 : T0 + Math.floor(i / 3) * 1000 }));
      for (const r of appended) store.append(r);
      // Independently of the store: created_at descending, and among equal ones the later appended first.
      const expected = (keep: (r: LogRecord) => boolean) =>
        appended
          .map((r, i) => ({ r, i }))
          .filter(({ r }) => keep(r))
          .sort((a, b) => b.r.created_at - a.r.created_at || b.i - a.i)
          .map(({ r }) => r.request_id);
      const pages = async (filter: Parameters<typeof store.list>[0], limit: number) => {
        const seen: string[][] = [];
        let cursor: string | undefined;
        do {
          const page = await store.list(filter, cursor === undefined ? { limit } : { limit, cursor });
          seen.push(page.items.map((r) => r.request_id));
          cursor = page.next_cursor ?? undefined;
        } while (cursor !== undefined && seen.length < 100);
        return seen;
      };
      t.same((await store.list({}, { limit: 500 })).items.map((r) => r.request_id), expected(() => true), 'one page');
      const byThree = await pages({}, 3);
      t.same(byThree.flat(), expected(() => true), 'pages of three');
      t.same(byThree.map((p) => p.length), [...Array(13).fill(3), 2], 'every page full but the last, which has no cursor');
      t.same((await pages({ access_key_id: 1 }, 2)).flat(), expected((r) => r.access_key_id === 1), 'filtered pages of two');
      t.same((await pages({ from: T0 - 20 * 60_000, to: T0 + 5000 }, 4)).flat(), expected((r) => r.created_at >= T0 - 20 * 60_000 && r.created_at < T0 + 5000), 'a time window');
    });

    t.test('list: a later batch whose newest record ties with the last of a page is still read', async (t) => {
      const store = await open(tempDir(t), { batchSize: 3, flushIntervalMs: 60_000 });
      t.teardown(() => store.close());
      // Batches [20 s, 10 s, 10 s] and [10 s, 5 s]: the second batch's 10 s record came last, so it is the newest of the three.
      for (const [i, s] of [[0, 20], [1, 10], [2, 10], [3, 10], [4, 5]] as const) store.append(record(i, { created_at: T0 + s * 1000 }));
      const first = await store.list({}, { limit: 2 });
      t.same(first.items.map((r) => r.request_id), ['req_000000', 'req_000003']);
      const rest = await store.list({}, { limit: 10, cursor: first.next_cursor! });
      t.same(rest.items.map((r) => r.request_id), ['req_000002', 'req_000001', 'req_000004']);
    });

    t.test('get: a UUIDv7 id is found in the batches of its millisecond; any other id by searching every batch', async (t) => {
      const store = await open(tempDir(t), { batchSize: 8, flushIntervalMs: 60_000 });
      t.teardown(() => store.close());
      const body: RecordedRequestBody = { state: 'recorded', original_bytes: 9, body: { a: [1, 'é'] } };
      const stored: LogRecord[] = [];
      for (let i = 0; i < 60; i++) {
        const created_at = T0 + i * 1000;
        const request_id = i % 3 === 0 ? `req_${i}` : i % 3 === 1 ? newRequestId(created_at) : newRequestId(created_at - 3_600_000);
        stored.push(record(i, { request_id, created_at, ...(i % 7 === 0 ? { request_body: body } : {}) }));
      }
      for (const r of stored) store.append(r);
      for (const r of stored) t.same(await store.get(r.request_id), r, r.request_id);
      t.equal(await store.get(newRequestId(T0 + 5000)), undefined, 'a UUIDv7 id not stored');
      t.equal(await store.get('req_1'), undefined, 'part of a stored id (req_12) is not a match');
      t.equal(await store.get('req_1234'), undefined, 'an id that contains a stored one (req_12) is not a match');
    });

    t.test('usage aggregation by bucket and dimensions', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      // Three hours, in hour h there are h+1 records for key 1 model a, and 1 for key 2 model b.
      let n = 0;
      for (let h = 0; h < 3; h++) {
        for (let j = 0; j <= h; j++) {
          store.append(record(n++, { created_at: T0 + h * HOUR + j * 1000, access_key_id: 1, external_model: 'a', group_id: 'g1', cost: 0.5 }));
        }
        store.append(record(n++, { created_at: T0 + h * HOUR + 30_000, access_key_id: 2, external_model: 'b', group_id: 'g1', status: 500, cost: 0.25 }));
      }
      const hourly = await store.usage({ bucket: 'hour', group_by: ['key'] });
      t.same(
        hourly.map((r) => [r.bucket_start - T0, r.access_key_id, r.requests, r.errors]),
        [[0, 1, 1, 0], [0, 2, 1, 1], [HOUR, 1, 2, 0], [HOUR, 2, 1, 1], [2 * HOUR, 1, 3, 0], [2 * HOUR, 2, 1, 1]],
      );
      const daily = await store.usage({ bucket: 'day', group_by: ['model', 'group'] });
      t.equal(daily.length, 2);
      const a = daily.find((r) => r.model === 'a');
      t.equal(a?.bucket_start, Date.UTC(2025, 0, 15));
      t.equal(a?.group_id, 'g1');
      t.equal(a?.requests, 6);
      t.equal(a?.input_tokens, 600);
      t.equal(a?.output_tokens, 60);
      t.equal(a?.cached_tokens, 120);
      t.equal(a?.reasoning_tokens, 12);
      t.equal(a?.cost, 3);
      t.notOk(a && 'access_key_id' in a, 'only requested dimensions');
      const onlyKey2 = await store.usage({ bucket: 'day', group_by: [], access_key_id: 2 });
      t.same(onlyKey2.map((r) => [r.requests, r.cost]), [[3, 0.75]]);
      const shifted = await store.usage({ bucket: 'day', group_by: [], utc_offset_minutes: 16 * 60 });
      t.same(shifted.map((r) => [r.bucket_start, r.requests]), [[Date.UTC(2025, 0, 16) - 16 * HOUR, 9]], 'local day for UTC+16 starts at 08:00 UTC');
      const window = await store.usage({ bucket: 'hour', group_by: [], from: T0 + HOUR, to: T0 + 2 * HOUR });
      t.same(window.map((r) => r.requests), [3]);
    });

    t.test('statistics for the home page', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      const empty = await store.statistics({});
      t.equal(empty.requests, 0);
      t.equal(empty.error_rate, 0);
      for (let i = 0; i < 100; i++) store.append(record(i, { client_aborted: i === 3 }));
      const stats = await store.statistics({ top: 1 });
      t.equal(stats.requests, 100);
      t.equal(stats.errors, 10);
      t.equal(stats.error_rate, 0.1);
      t.equal(stats.client_aborted, 1);
      t.equal(stats.input_tokens, 10_000);
      t.ok(Math.abs(stats.cost - 0.1) < 1e-9);
      t.equal(stats.avg_duration_ms, 40);
      t.equal(stats.avg_ttfb_ms, 12);
      t.same(stats.by_status_class, { '1xx': 0, '2xx': 90, '3xx': 0, '4xx': 0, '5xx': 10 });
      t.same(stats.top_models.map((m) => [m.model, m.requests]), [['small-model', 80]]);
      const scoped = await store.statistics({ access_key_id: 1 });
      t.equal(scoped.requests, 50);
      // The gateway's own refusals never reach an upstream: no first byte to average.
      for (let i = 100; i < 200; i++) store.append(record(i, { status: 401, error_code: 'access_key_invalid', timings: { started_at: T0 + i * 1000, ttfb_ms: null, duration_ms: 0 } }));
      const withRefusals = await store.statistics({});
      t.equal(withRefusals.avg_duration_ms, 20, 'duration averages every request');
      t.equal(withRefusals.avg_ttfb_ms, 12, 'time to first byte averages only the requests that had one');
    });

    t.test('batches are written without a read, on the timer and when full', async (t) => {
      const store = await open(tempDir(t), { batchSize: 50, flushIntervalMs: 5 });
      t.teardown(() => store.close());
      for (let i = 0; i < 120; i++) store.append(record(i));
      t.equal(store.buffered, 120);
      for (let tries = 0; store.buffered > 0 && tries < 2000; tries++) await new Promise((r) => setTimeout(r, 5));
      t.equal(store.buffered, 0, 'written in the background');
      t.equal((await store.statistics({})).requests, 120);
    });

    t.test('close flushes thousands of buffered records; reopen reads them', async (t) => {
      const dir = tempDir(t);
      const store = await open(dir, { flushIntervalMs: 60_000, batchSize: 100_000 });
      const N = 5000;
      for (let i = 0; i < N; i++) store.append(record(i));
      t.equal(store.buffered, N, 'nothing written yet');
      await store.close();
      await store.close();
      t.throws(() => store.append(record(N)), /closed/);
      await t.rejects(store.get('req_000001'), /closed/);
      await t.rejects(store.list({}, { limit: 1 }), /closed/);
      await t.rejects(store.usage({ bucket: 'day', group_by: [] }), /closed/);
      await t.rejects(store.statistics({}), /closed/);
      await t.rejects(store.prune(T0), /closed/);

      const reopened = await open(dir);
      t.teardown(() => reopened.close());
      t.equal((await reopened.statistics({})).requests, N, 'no record lost');
      t.same(await reopened.get('req_004999'), record(4999));
      reopened.append(record(N));
      t.equal((await reopened.list({}, { limit: 1 })).items[0]?.request_id, `req_00${N}`);
    });

    t.test('prune deletes the records created before the cutoff and their bodies, over several batches; newer ones stay', async (t) => {
      const dir = tempDir(t);
      const store = await open(dir);
      const OLD = 2500;
      const NEW = 20;
      const body = { state: 'recorded', original_bytes: 2, body: {} } as const;
      // Bodies on every 10th record, old and new alike; all still buffered when prune is called.
      for (let i = 0; i < OLD + NEW; i++) store.append(record(i, i % 10 === 0 ? { request_body: body } : {}));
      const cutoff = T0 + OLD * 1000;

      t.equal(await store.prune(cutoff), OLD, 'the old records, buffered ones included');
      t.equal(await store.prune(cutoff), 0, 'nothing left to prune');
      t.equal(await store.get(record(0).request_id), undefined, 'an old record is gone');
      t.same(await store.get(record(OLD).request_id), record(OLD, { request_body: body }), 'a newer one stays, with its body');
      const listed = await store.list({}, { limit: 500 });
      t.same(listed.items.map((r) => r.request_id), Array.from({ length: NEW }, (_, i) => record(OLD + NEW - 1 - i).request_id), 'list shows only the newer records');
      t.equal((await store.statistics({})).requests, NEW);
      const usage = await store.usage({ bucket: 'day', group_by: [] });
      t.same(usage.map((r) => r.requests), [NEW], 'usage counts only the newer records');

      store.append(record(OLD + NEW));
      await store.close();
      const db = openClosedStoreFile(t, dir);
      t.same(db.prepare('SELECT SUM(count) AS n FROM log_batches').get(), { n: NEW + 1 });
      t.same(db.prepare('SELECT COUNT(*) AS n FROM request_bodies').get(), { n: NEW / 10 }, 'the old records’ bodies went with them');
    });

    t.test('a prune that rewrites a batch keeps the order of its remaining records: a cursor taken before goes on where it was', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      // One batch: an old record first, then four that share a created_at.
      store.append(record(0, { created_at: T0 - 10_000 }));
      for (let i = 1; i <= 4; i++) store.append(record(i, { created_at: T0 }));
      const first = await store.list({}, { limit: 2 });
      t.same(first.items.map((r) => r.request_id), ['req_000004', 'req_000003']);
      t.equal(await store.prune(T0), 1);
      const rest = await store.list({}, { limit: 10, cursor: first.next_cursor! });
      t.same(rest.items.map((r) => r.request_id), ['req_000002', 'req_000001'], 'neither repeated nor skipped');
    });

    t.test('records appended while a prune runs are kept', async (t) => {
      const store = await open(tempDir(t));
      t.teardown(() => store.close());
      for (let i = 0; i < 3000; i++) store.append(record(i));
      const pruning = store.prune(T0 + 3000 * 1000);
      const late = record(3000);
      store.append(late);
      t.equal(await pruning, 3000);
      t.same(await store.get(late.request_id), late);
    });
  });
}

/** The store's database file, opened after the store closed, to look at what it wrote. */
function openClosedStoreFile(t: Test, dir: string): Database.Database {
  const db = new Database(join(dir, LOG_DB_FILE), { fileMustExist: true });
  t.teardown(() => db.close());
  return db;
}
