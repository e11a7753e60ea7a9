import t from 'tap';
import { watchUpstreamIntake } from '../../src/dataplane/session-upstream-intake.ts';
import { fakeClock } from './helpers/fake-idle-clock.ts';

// docs/data-plane.md, WebSocket sessions: an upstream that takes none of what waits for it for the
// idle timeout has stalled; one that only sends nothing is not, nor is one the gateway holds back
// for a slow client, whose time held back does not count: let go, it has the whole timeout again.
const IDLE_MS = 1000;

function intake() {
  const { clock, advance, liveTimers } = fakeClock();
  const upstream = { bufferedAmount: 0 };
  let stalls = 0;
  const watch = watchUpstreamIntake(upstream, IDLE_MS, () => stalls++, clock);
  return { watch, upstream, advance, liveTimers, stalls: () => stalls };
}

t.test('what waits untaken for the idle timeout is a stall; what the upstream takes restarts the count', async (t) => {
  const { watch, upstream, advance, stalls } = intake();
  upstream.bufferedAmount = 100;
  watch.sent();
  advance(IDLE_MS - 1);
  upstream.bufferedAmount = 50;
  watch.written();
  advance(IDLE_MS - 1);
  t.equal(stalls(), 0, 'it took some within each timeout');
  advance(1);
  t.equal(stalls(), 1, 'then nothing for a whole timeout');
});

t.test('nothing waiting is no stall, however long', async (t) => {
  const { watch, upstream, advance, stalls } = intake();
  watch.sent();
  advance(10 * IDLE_MS);
  upstream.bufferedAmount = 100;
  watch.sent();
  upstream.bufferedAmount = 0;
  watch.written();
  advance(10 * IDLE_MS);
  t.equal(stalls(), 0);
});

t.test('held back for a slow client after its watch began: not judged; let go, the whole timeout again', async (t) => {
  const { watch, upstream, advance, liveTimers, stalls } = intake();
  upstream.bufferedAmount = 100;
  watch.sent();
  advance(IDLE_MS - 1);
  watch.heldBack();
  advance(5 * IDLE_MS);
  t.equal(stalls(), 0, 'not while held back');
  t.equal(liveTimers(), 0, 'no watcher while held back: nothing wakes every timeout');
  watch.letGo();
  advance(IDLE_MS - 1);
  t.equal(stalls(), 0, 'the time before the hold does not count');
  advance(1);
  t.equal(stalls(), 1, 'a whole timeout after it was let go');
});

t.test('sends while held back start no watch; a stopped watch starts none again', async (t) => {
  const { watch, upstream, advance, stalls } = intake();
  watch.heldBack();
  upstream.bufferedAmount = 100;
  watch.sent();
  advance(5 * IDLE_MS);
  t.equal(stalls(), 0);
  watch.stop();
  watch.letGo();
  watch.sent();
  advance(5 * IDLE_MS);
  t.equal(stalls(), 0, 'the session ended');
});

t.test('what waited going out unreported (a relayed ping or pong queued behind it) is no stall; a later wait is watched again', async (t) => {
  const { watch, upstream, advance, stalls } = intake();
  upstream.bufferedAmount = 100;
  watch.sent();
  upstream.bufferedAmount = 10;
  watch.written();
  upstream.bufferedAmount = 0;
  advance(5 * IDLE_MS);
  t.equal(stalls(), 0, 'nothing waits when the deadline falls due');
  upstream.bufferedAmount = 100;
  watch.sent();
  advance(IDLE_MS);
  t.equal(stalls(), 1, 'a new wait untaken is a stall');
});
