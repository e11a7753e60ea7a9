import t from 'tap';
import { LogBatchAppender } from '../../src/store/logs/log-batch-appender.ts';
import { decodeLogBatch, decodedRecord } from '../../src/store/logs/decode-log-batch.ts';
import type { SealedLogBatch } from '../../src/store/logs/write-log-batch.ts';
import { logRecord } from '../management/support/log-records.ts';

const record = (i: number) => logRecord({ request_id: `r${i}` });
const ids = (batch: SealedLogBatch) => {
  const decoded = decodeLogBatch(batch.data);
  return Array.from({ length: decoded.count }, (_, i) => decodedRecord(decoded, i).request_id);
};

t.test('seals batches of at most batchSize, each with its own key', async (t) => {
  const batches: SealedLogBatch[] = [];
  const appender = new LogBatchAppender((b) => batches.push(b), { batchSize: 3, flushIntervalMs: 60_000 });
  for (let i = 0; i < 7; i++) appender.append(record(i));
  t.equal(appender.size, 7);
  appender.flushAll();
  t.same(batches.map(ids), [['r0', 'r1', 'r2'], ['r3', 'r4', 'r5'], ['r6']]);
  t.same(batches.map((b) => b.count), [3, 3, 1]);
  t.equal(new Set(batches.map((b) => b.key)).size, 3, 'keys differ');
  const other: SealedLogBatch[] = [];
  const second = new LogBatchAppender((b) => other.push(b));
  second.append(record(0));
  second.flushAll();
  t.notOk(batches.some((b) => b.key === other[0]!.key), 'and differ from another appender’s');
  t.equal(appender.size, 0);
});

t.test('a full batch is handed on at the next turn, one batch per turn; the rest waits for the timer', async (t) => {
  const batches: SealedLogBatch[] = [];
  // A timer far off: a loaded machine's pause between two turns must not let it seal the rest.
  const appender = new LogBatchAppender((b) => batches.push(b), { batchSize: 2, flushIntervalMs: 60_000 });
  t.teardown(() => appender.flushAll());
  for (let i = 0; i < 5; i++) appender.append(record(i));
  t.same(batches, [], 'append never hands on synchronously');
  await new Promise((r) => setImmediate(r));
  t.same(batches.map(ids), [['r0', 'r1']]);
  await new Promise((r) => setImmediate(r));
  t.same(batches.map(ids), [['r0', 'r1'], ['r2', 'r3']]);
  await new Promise((r) => setImmediate(r));
  t.same(batches.map(ids), [['r0', 'r1'], ['r2', 'r3']], 'the part-filled batch is not handed on by a turn');
});

t.test('a part-filled batch is handed on after flushIntervalMs', async (t) => {
  const batches: SealedLogBatch[] = [];
  const appender = new LogBatchAppender((b) => batches.push(b), { batchSize: 2, flushIntervalMs: 20 });
  for (let i = 0; i < 5; i++) appender.append(record(i));
  await new Promise((r) => setTimeout(r, 100));
  t.same(batches.map(ids), [['r0', 'r1'], ['r2', 'r3'], ['r4']], 'the last one after flushIntervalMs');
});

t.test('recorded bodies travel beside the batch, as rows', async (t) => {
  const batches: SealedLogBatch[] = [];
  const appender = new LogBatchAppender((b) => batches.push(b));
  appender.append(record(0));
  appender.append(logRecord({ request_id: 'with-body', request_body: { state: 'truncated', original_bytes: 99, body: 'text' } }));
  appender.flushAll();
  t.same(batches[0]!.bodies, [['with-body', 'truncated', 99, 'text', 0]]);
});

t.test('a failing hand-on keeps the batches and reports; beyond maxBuffered the oldest batches are dropped', async (t) => {
  let fail = true;
  const handed: string[][] = [];
  const errors: unknown[] = [];
  const appender = new LogBatchAppender(
    (b) => {
      if (fail) throw new Error('disk full');
      handed.push(ids(b));
    },
    { batchSize: 2, flushIntervalMs: 1, maxBuffered: 4, onError: (e) => errors.push(e) },
  );
  for (let i = 0; i < 3; i++) appender.append(record(i));
  t.throws(() => appender.flushAll(), /disk full/);
  t.equal(appender.size, 3, 'kept');
  for (let tries = 0; errors.length === 0 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 2));
  t.ok(errors.length > 0, 'background failure reported');
  for (let i = 3; i < 6; i++) appender.append(record(i));
  t.equal(appender.dropped, 2, 'the oldest batch went');
  t.equal(appender.size, 4);
  fail = false;
  appender.flushAll();
  t.same(handed, [['r2'], ['r3', 'r4'], ['r5']]);
});

t.test('records dropped beyond maxBuffered are reported through onError with their number and the hand-on failure', async (t) => {
  const errors: unknown[] = [];
  const appender = new LogBatchAppender(
    () => {
      throw new Error('disk full');
    },
    { batchSize: 2, flushIntervalMs: 60_000, maxBuffered: 4, onError: (e) => errors.push(e) },
  );
  for (let i = 0; i < 2; i++) appender.append(record(i));
  t.throws(() => appender.flushAll(), /disk full/);
  // Three more batches of two: the two oldest of the five batches no longer fit.
  for (let i = 2; i < 8; i++) appender.append(record(i));
  t.equal(appender.dropped, 4);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const reports = errors.filter((e) => e instanceof Error && /dropped/.test(e.message)).map((e) => (e as Error).message);
  t.same(reports, ['4 request records were dropped: the log store could not keep up (disk full)'], 'one report for the drops of one turn');
});

t.test('beyond maxBufferedBytes the oldest batches’ bodies are dropped first, marked so, then the oldest batches', async (t) => {
  let fail = true;
  const handed: SealedLogBatch[] = [];
  const body = 'b'.repeat(1000);
  const withBody = (i: number) => logRecord({ request_id: `r${i}`, request_body: { state: 'recorded', original_bytes: 1000, body } });
  // What one batch of a record takes, with and without its body (ids r10 to r99 have the same length).
  const probe: SealedLogBatch[] = [];
  const measure = new LogBatchAppender((b) => probe.push(b));
  for (const r of [record(10), withBody(10)]) {
    measure.append(r);
    measure.flushAll();
  }
  const [plain, bodied] = probe.map((b) => b.bytes) as [number, number];
  t.ok(plain > 125 && plain < 375, `a record alone takes ${plain} bytes (the next test's cap assumes 125 to 375)`);
  t.equal(bodied, plain + 1000, 'a batch counts its bodies’ text');
  const cap = 3 * bodied + 10;
  const appender = new LogBatchAppender(
    (b) => {
      if (fail) throw new Error('disk full');
      handed.push(b);
    },
    { batchSize: 1, flushIntervalMs: 60_000, maxBuffered: 1000, maxBufferedBytes: cap },
  );
  for (let i = 10; i < 16; i++) {
    appender.append(withBody(i));
    t.throws(() => appender.flushAll(), /disk full/);
    t.ok(appender.bufferedBytes <= cap, `within the cap after record ${i}`);
  }
  t.equal(appender.dropped, 0, 'no record dropped while bodies could go');
  t.equal(appender.size, 6);
  // Bodies kept: as many of the newest as fit beside six records.
  const keptBodies = Math.floor((cap - 6 * plain) / 1000);
  t.equal(appender.bufferedBytes, 6 * plain + keptBodies * 1000);

  for (let i = 16; i < 40; i++) {
    appender.append(record(i));
    t.throws(() => appender.flushAll(), /disk full/);
    t.ok(appender.bufferedBytes <= cap, `within the cap after record ${i}`);
  }
  const kept = Math.floor(cap / plain);
  t.equal(appender.size, kept, 'as many records as fit without bodies');
  t.equal(appender.dropped, 30 - kept, 'the others dropped and counted');

  fail = false;
  appender.flushAll();
  t.same(handed.map((b) => ids(b)[0]), Array.from({ length: kept }, (_, i) => `r${40 - kept + i}`), 'the oldest records went');
  const bodies = handed.flatMap((b) => b.bodies ?? []);
  t.same(bodies, Array.from({ length: bodies.length }, (_, i) => [`r${40 - kept + i}`, 'dropped', 1000, '', 0]), 'bodies kept with their records are marked dropped');
});

t.test('bodies dropped while writes fail: the oldest first, the newest written whole once the hand-on works', async (t) => {
  let fail = true;
  const handed: SealedLogBatch[] = [];
  const body = 'b'.repeat(1000);
  const appender = new LogBatchAppender(
    (b) => {
      if (fail) throw new Error('disk full');
      handed.push(b);
    },
    { batchSize: 1, flushIntervalMs: 60_000, maxBufferedBytes: 3500 },
  );
  for (let i = 10; i < 14; i++) {
    appender.append(logRecord({ request_id: `r${i}`, request_body: { state: 'truncated', original_bytes: 5000, body } }));
    t.throws(() => appender.flushAll(), /disk full/);
  }
  fail = false;
  appender.flushAll();
  t.equal(appender.dropped, 0);
  t.same(
    handed.map((b) => b.bodies![0]!.slice(0, 3)),
    [
      ['r10', 'dropped', 5000],
      ['r11', 'dropped', 5000],
      ['r12', 'truncated', 5000],
      ['r13', 'truncated', 5000],
    ],
  );
  t.equal(handed[3]!.bodies![0]![3], body);
});
