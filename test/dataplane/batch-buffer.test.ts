import t from 'tap';
import { BatchBuffer } from '../../src/store/logs/index.ts';

t.test('writes in batches of at most batchSize', async (t) => {
  const batches: number[][] = [];
  const buffer = new BatchBuffer<number>((b) => batches.push(b), { batchSize: 3, flushIntervalMs: 60_000 });
  for (let i = 0; i < 7; i++) buffer.add(i);
  buffer.flushAll();
  t.same(batches, [[0, 1, 2], [3, 4, 5], [6]]);
  t.equal(buffer.size, 0);
});

t.test('a full batch is written on the next turn, one batch per turn', async (t) => {
  const batches: number[][] = [];
  const buffer = new BatchBuffer<number>((b) => batches.push(b), { batchSize: 2, flushIntervalMs: 60_000 });
  for (let i = 0; i < 5; i++) buffer.add(i);
  t.same(batches, [], 'append never writes synchronously');
  await new Promise((r) => setImmediate(r));
  t.same(batches, [[0, 1]]);
  await new Promise((r) => setImmediate(r));
  t.same(batches, [[0, 1], [2, 3]]);
  buffer.flushAll();
  t.same(batches.flat(), [0, 1, 2, 3, 4]);
});

t.test('a failing write keeps the items and reports; overflow drops the oldest', async (t) => {
  let fail = true;
  const written: number[] = [];
  const errors: unknown[] = [];
  const buffer = new BatchBuffer<number>(
    (b) => {
      if (fail) throw new Error('disk full');
      written.push(...b);
    },
    { batchSize: 10, flushIntervalMs: 1, maxBuffered: 4, onError: (e) => errors.push(e) },
  );
  for (let i = 0; i < 3; i++) buffer.add(i);
  t.throws(() => buffer.flushAll(), /disk full/);
  t.equal(buffer.size, 3, 'kept');
  for (let tries = 0; errors.length === 0 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 2));
  t.ok(errors.length > 0, 'background failure reported');
  buffer.add(3);
  buffer.add(4);
  t.equal(buffer.size, 4);
  t.equal(buffer.dropped, 1);
  fail = false;
  buffer.flushAll();
  t.same(written, [1, 2, 3, 4]);
});
