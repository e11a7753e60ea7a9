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

t.test('a full batch is handed on at the next turn, one batch per turn; the rest on the timer', async (t) => {
  const batches: SealedLogBatch[] = [];
  const appender = new LogBatchAppender((b) => batches.push(b), { batchSize: 2, flushIntervalMs: 20 });
  for (let i = 0; i < 5; i++) appender.append(record(i));
  t.same(batches, [], 'append never hands on synchronously');
  await new Promise((r) => setImmediate(r));
  t.same(batches.map(ids), [['r0', 'r1']]);
  await new Promise((r) => setImmediate(r));
  t.same(batches.map(ids), [['r0', 'r1'], ['r2', 'r3']]);
  await new Promise((r) => setTimeout(r, 60));
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
