import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { newRequestId } from '../src/dataplane/new-request-id.ts';
import { LogBatchAppender } from '../src/store/logs/log-batch-appender.ts';
import { LOG_SCHEMA } from '../src/store/logs/log-schema.ts';
import { LogBatchWriter, type SealedLogBatch } from '../src/store/logs/write-log-batch.ts';
import { openWorkerLogStore, type LogRecord } from '../src/store/logs/index.ts';

/**
 * What a log record costs each thread, in a few seconds (not part of `npm run bench`):
 *   node --import=tsx bench/log-store-cost.ts [distinct AccessKeys, default 1]
 * 1. `append` on the main thread (encoding into the open batch, sealing), no hand-on;
 * 2. the writer's transaction per batch (decode, blob, dimensions, rollups), in this thread;
 * 3. a WorkerLogStore: CPU per record of each thread of this process, from /proc (Linux).
 * The records look like the data plane's: fresh strings, as parsed from each request.
 */
const keys = Number(process.argv[2] ?? 1);
const BATCH = 1024;
/** Fewer records than the appender keeps while nothing is handed on (maxBuffered, 100 000). */
const BATCHES = 90;
const N = BATCH * BATCHES;

const fresh = (s: string): string => Buffer.from(s).toString();
let clock = Date.now() - 3_600_000;
function record(i: number): LogRecord {
  clock += 2;
  return {
    request_id: newRequestId(clock), created_at: clock, access_key_id: 1 + (i % keys), group_id: fresh('12'), channel: fresh('ch02'), credential_id: fresh('7'),
    protocol: fresh('x-completions'), operation: fresh('chat-completions'), route_mode: 'N', effective: 'native', external_model: fresh('team-model'),
    upstream_model: fresh('vendor-model-2024'), status: i % 50 === 0 ? 502 : 200, error_code: i % 50 === 0 ? fresh('upstream_error') : null, attempt_count: 1,
    attempts: [{ credential_id: fresh('7'), group_id: fresh('12'), status: 200, error_code: null }], client_aborted: false,
    timings: { started_at: clock, ttfb_ms: 12.4, duration_ms: 45.6 }, usage: { input_tokens: 1000, output_tokens: 500, cached_tokens: 0, reasoning_tokens: 0 },
    cost: 0.0123, currency: 'USD',
  };
}

const perRecord = (ns: bigint | number): string => `${(Number(ns) / N / 1000).toFixed(2)} us/record`;

// 1. append
const sealed: SealedLogBatch[] = [];
const appender = new LogBatchAppender((batch) => sealed.push(batch), { batchSize: BATCH, flushIntervalMs: 60_000 });
for (let round = 0; round < 3; round++) {
  sealed.length = 0;
  const records = Array.from({ length: N }, (_, i) => record(i));
  const start = process.hrtime.bigint();
  for (const r of records) appender.append(r);
  appender.flushAll();
  console.log(`append, round ${round + 1}: ${perRecord(process.hrtime.bigint() - start)} (${(sealed.reduce((n, b) => n + b.data.length, 0) / N).toFixed(0)} bytes)`);
}

// 2. the writer
const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-log-cost-'));
try {
  const db = new Database(path.join(dir, 'logs.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(LOG_SCHEMA);
  const writer = new LogBatchWriter(db);
  const cpu = (): number => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) * 1000;
  };
  const before = cpu();
  for (const batch of sealed) writer.write(batch);
  console.log(`writer, ${keys} AccessKey(s): ${perRecord(cpu() - before)} CPU`);
  db.close();

  // 3. a WorkerLogStore
  const threads = (): Map<string, number> =>
    new Map(
      readdirSync('/proc/self/task').map((tid) => {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return [tid, Number(fields[11]) + Number(fields[12])];
      }),
    );
  const store = await openWorkerLogStore(path.join(dir, 'worker'));
  const records = Array.from({ length: N }, (_, i) => record(i));
  const ticks = threads();
  for (let b = 0; b < BATCHES; b++) {
    for (let i = 0; i < BATCH; i++) store.append(records[b * BATCH + i]!);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await store.flush();
  for (const [tid, now] of threads()) {
    const used = now - (ticks.get(tid) ?? 0);
    // Clock ticks are 10 ms.
    if (used > 0) console.log(`WorkerLogStore, thread ${tid}${tid === String(process.pid) ? ' (main)' : ''}: ${perRecord(used * 10_000_000)} CPU`);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
