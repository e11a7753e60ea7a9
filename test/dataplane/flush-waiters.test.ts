import t from 'tap';
import { FlushWaiters } from '../../src/store/logs/flush-waiters.ts';

/** Where a flush's promise stands after the microtasks queued so far have run. */
function track(promise: Promise<void>): { state: 'waiting' | 'resolved' | 'rejected'; error?: unknown } {
  const seen: { state: 'waiting' | 'resolved' | 'rejected'; error?: unknown } = { state: 'waiting' };
  promise.then(
    () => (seen.state = 'resolved'),
    (error: unknown) => Object.assign(seen, { state: 'rejected', error }),
  );
  return seen;
}

const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test('a failed commit fails the flushes asked before it began; one asked since waits for the next commit', async (t) => {
  const waiters = new FlushWaiters();
  const before = track(waiters.wait(3, 1_000));
  const atStart = track(waiters.wait(3, 2_000));
  const since = track(waiters.wait(3, 2_001));
  const busy = new Error('SQLITE_BUSY: database is locked');

  waiters.reject(busy, 2_000);
  await settled();
  t.same([before.state, atStart.state, since.state], ['rejected', 'rejected', 'waiting'], 'only the flushes asked by the time the commit began fail');
  t.equal(before.error, busy, 'with the commit\'s error');
  t.equal(waiters.size, 1, 'the later flush is still pending');

  waiters.settleAcknowledged((through) => through > 3);
  await settled();
  t.equal(since.state, 'resolved', 'the next commit that acknowledges its batches resolves it');
  t.equal(waiters.size, 0);
});

t.test('acknowledgements resolve only the flushes whose batches are all committed', async (t) => {
  const waiters = new FlushWaiters();
  const early = track(waiters.wait(1, 0));
  const late = track(waiters.wait(4, 0));
  const committedThrough = 2;

  waiters.settleAcknowledged((through) => through > committedThrough);
  await settled();
  t.same([early.state, late.state], ['resolved', 'waiting']);
  t.equal(waiters.size, 1);
});

t.test('a failure with no commit time (a worker that could not start, a close) fails every pending flush', async (t) => {
  const waiters = new FlushWaiters();
  const a = track(waiters.wait(1, 5));
  const b = track(waiters.wait(2, Number.MAX_SAFE_INTEGER));
  const closed = new Error('log store is closed');

  waiters.reject(closed);
  await settled();
  t.same([a.state, b.state], ['rejected', 'rejected']);
  t.equal(b.error, closed);
  t.equal(waiters.size, 0);
});
