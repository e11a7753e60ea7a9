import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE, openWorkerLogStore, type WorkerLogStoreOptions } from '../../src/store/logs/index.ts';
import { logRecord } from './support/log-records.ts';
import { startGateway, type Gateway } from './support/gateway.ts';

// The management plane over a log store whose writes fail (as on a full disk): what health shows, what log reads answer, what a shutdown says.

const FAIL_INSERTS = `CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`;

/** A gateway on the worker log store (by default holding at most 30 unwritten records), and a second connection that can make its writes fail. */
async function gatewayWithFailableStore(
  t: Test,
  options: WorkerLogStoreOptions = { batchSize: 10, flushIntervalMs: 60_000, maxBuffered: 30 },
): Promise<{ gw: Gateway; db: Database.Database; errors: unknown[] }> {
  const errors: unknown[] = [];
  const gw = await startGateway(t, { openLogStore: (dir) => openWorkerLogStore(dir, { ...options, onError: (e) => errors.push(e) }) });
  const db = new Database(join(gw.dataDir, LOG_DB_FILE));
  t.teardown(() => {
    db.exec('DROP TRIGGER IF EXISTS fail_log_inserts');
    db.close();
  });
  return { gw, db, errors };
}

const append = (gw: Gateway, from: number, to: number) => {
  for (let i = from; i < to; i++) gw.server.logs.append(logRecord({ request_id: `req_${String(i).padStart(6, '0')}`, created_at: Date.UTC(2025, 0, 15) + i }));
};

t.test('health shows the records waiting and dropped; log reads answer 503 LOG_STORE_UNAVAILABLE while the store fails, and work again after', async (t) => {
  const { gw, db } = await gatewayWithFailableStore(t);
  t.match((await gw.api('GET', '/api/health')).json.data, { status: 'ok', request_logs: { buffered: 0, dropped: 0 } });

  // A key whose quota route inspection reads from the log store.
  const metered = (await gw.create('/api/access-keys', { name: 'metered', protocols: ['x-completions'], quota: { total: { requests: 10 } } })).json.data;

  db.exec(FAIL_INSERTS);
  // 100 records in batches of ten; with the writes failing only the 30 newest are kept.
  append(gw, 0, 100);
  await gw.server.logs.flush().catch(() => {});
  const health = (await gw.api('GET', '/api/health')).json.data;
  t.match(health, { status: 'degraded', stores: { config: 'ok', logs: 'failing' }, request_logs: { buffered: 30, dropped: 70 } });
  t.ok(health.memory && health.uptime_seconds !== undefined, 'the existing fields stay');

  for (const path of ['/api/logs', '/api/logs/req_000099', '/api/usage', '/api/home', '/api/home/statistics']) {
    const res = await gw.api('GET', path);
    t.equal(res.status, 503, `${path} while the store fails`);
    t.match(res.json, { code: 'LOG_STORE_UNAVAILABLE' });
  }
  const inspected = await gw.api('POST', '/api/route/inspect', { body: { protocol: 'x-completions', external_model: 'm', access_key_id: metered.id } });
  t.equal(inspected.status, 503, 'route inspection reads the quota from the same store');
  t.match(inspected.json, { code: 'LOG_STORE_UNAVAILABLE' });

  db.exec('DROP TRIGGER fail_log_inserts');
  const logs = await gw.api('GET', '/api/logs?limit=500');
  t.equal(logs.status, 200, 'the store works again');
  t.equal(logs.json.data.items.length, 30, 'the records kept are written');
  t.match((await gw.api('GET', '/api/health')).json.data, { status: 'ok', request_logs: { buffered: 0, dropped: 70 } });
});

t.test('health shows the bytes waiting and the recorded bodies let go to stay within maxBufferedBytes', async (t) => {
  const BODY = 100_000;
  const { gw, db } = await gatewayWithFailableStore(t, { batchSize: 1, flushIntervalMs: 60_000, maxBufferedBytes: 3.5 * BODY });
  db.exec(FAIL_INSERTS);
  for (let i = 0; i < 10; i++) {
    const request_body = { state: 'recorded' as const, original_bytes: BODY, body: 'x'.repeat(BODY) };
    gw.server.logs.append(logRecord({ request_id: `req_${String(i).padStart(6, '0')}`, created_at: Date.UTC(2025, 0, 15) + i, request_body }));
  }
  await gw.server.logs.flush().catch(() => {});
  const { request_logs } = (await gw.api('GET', '/api/health')).json.data;
  t.match(request_logs, { buffered: 10, dropped: 0, bodies_dropped: 7 }, 'every record kept, seven bodies let go');
  t.ok(request_logs.buffered_bytes > 3 * BODY && request_logs.buffered_bytes <= 3.5 * BODY, `${request_logs.buffered_bytes} bytes waiting, the three bodies kept among them`);
});

t.test('a shutdown with a failing log store rejects, naming the records it could not write and why', async (t) => {
  const { gw, db } = await gatewayWithFailableStore(t);
  db.exec(FAIL_INSERTS);
  append(gw, 0, 25);
  const outcome = await gw.stop().then(() => undefined, (e: unknown) => e);
  t.ok(outcome instanceof Error, 'close rejects');
  t.match((outcome as Error).message, /^closing the stores failed: request logs: 25 request records could not be written: .*log inserts refused by the test/);
});
