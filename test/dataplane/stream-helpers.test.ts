import t from 'tap';
import { JsonArrayStreamSplitter, watchIdle, type IdleClock } from '../../src/streaming/index.ts';
import { fakeClock } from './helpers/fake-idle-clock.ts';

t.test('JSON array splitter: elements at any split point', async (t) => {
  const elements = [
    { candidates: [{ content: { parts: [{ text: 'a ] , } [ { "quoted" \\ ' }] } }] },
    { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 } },
  ];
  const text = '[' + elements.map((e) => JSON.stringify(e, null, 1)).join('\r\n,\r\n') + ']';
  const bytes = Buffer.from(text);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const splitter = new JsonArrayStreamSplitter(1024);
    const got = [...splitter.push(bytes.subarray(0, cut)), ...splitter.push(bytes.subarray(cut))];
    t.same(got.map((g) => JSON.parse(g)), elements, `cut at ${cut}`);
  }
});

t.test('JSON array splitter: element delivered when complete; a whole last element without its comma or ] by takeWhole', async (t) => {
  const splitter = new JsonArrayStreamSplitter(1024);
  t.same(splitter.push('[{"a":1}'), []);
  t.same(splitter.push(',{"b":'), ['{"a":1}']);
  t.equal(splitter.takeWhole(), undefined, 'half an element is not handed back');
  t.same(splitter.push('2}'), []);
  t.equal(splitter.takeWhole(), '{"b":2}');
  t.equal(splitter.takeWhole(), undefined, 'taken once');
  t.same(new JsonArrayStreamSplitter(1024).push('[]'), []);
});

t.test('JSON array splitter: an element longer than the limit is skipped, not held; the next ones are returned', async (t) => {
  const splitter = new JsonArrayStreamSplitter(32);
  const long = JSON.stringify({ text: 'x'.repeat(100) });
  t.same(splitter.push(`[{"a":1},${long.slice(0, 40)}`), ['{"a":1}']);
  t.equal(splitter.boundary(), 'inside_element');
  t.same(splitter.push(long.slice(40, 80)), [], 'nothing of the long element is returned');
  t.same(splitter.push(`${long.slice(80)}`), []);
  t.equal(splitter.boundary(), 'after_element', 'after the skipped element, as after any other');
  t.same(splitter.push(',{"usageMetadata":{}}]'), ['{"usageMetadata":{}}'], 'the element after it is whole');
  const unended = new JsonArrayStreamSplitter(32);
  unended.push(`[${long}`);
  t.equal(unended.boundary(), 'after_element');
  t.equal(unended.takeWhole(), undefined, 'an element past the limit is not handed back without its comma or ] either');
});

t.test('idle watcher fires after the timeout without activity', async (t) => {
  const { clock, advance } = fakeClock();
  let calls = 0;
  const watcher = watchIdle(1000, () => calls++, clock);
  advance(999);
  t.equal(calls, 0);
  advance(1);
  t.equal(calls, 1);
  t.ok(watcher.fired);
  advance(5000);
  t.equal(calls, 1, 'fires once');
});

t.test('idle watcher: a timeout past node\'s timer limit asks for no longer delay, and still fires when due', async (t) => {
  const { clock, advance } = fakeClock();
  const delays: number[] = [];
  const recording: IdleClock = { ...clock, setTimeout: (fn, ms) => (delays.push(ms), clock.setTimeout(fn, ms)) };
  let calls = 0;
  const timeout = 30 * 24 * 3600 * 1000;
  watchIdle(timeout, () => calls++, recording);
  t.ok(delays.length > 0 && delays.every((ms) => ms <= 2 ** 31 - 1), 'node fires a longer delay at once');
  advance(timeout - 1);
  t.equal(calls, 0, 'not before its time');
  advance(1);
  t.equal(calls, 1);
});

t.test('idle watcher: touches postpone, stop cancels', async (t) => {
  const { clock, advance, liveTimers } = fakeClock();
  let calls = 0;
  const watcher = watchIdle(1000, () => calls++, clock);
  for (let i = 0; i < 20; i++) {
    advance(600);
    watcher.touch();
  }
  t.equal(calls, 0, 'a stream with activity every 600 ms never idles at 1000 ms');
  advance(1000);
  t.equal(calls, 1);

  const other = watchIdle(1000, () => calls++, clock);
  advance(500);
  other.stop();
  t.equal(liveTimers(), 1, 'the shared timer stays when the last watcher stops');
  advance(5000);
  t.equal(calls, 1, 'and finds nothing to fire');
  t.notOk(other.fired);
  t.equal(liveTimers(), 0, 'nor a reason to wake again');

  const third = watchIdle(1000, () => calls++, clock);
  advance(1000);
  t.equal(calls, 2, 'a watcher after that is timed as before');
  t.ok(third.fired);
});

t.test('idle watchers that come and go one at a time share the timer of the first', async (t) => {
  const { clock, advance, liveTimers } = fakeClock();
  let calls = 0;
  for (let i = 0; i < 50; i++) {
    const watcher = watchIdle(1000, () => calls++, clock);
    advance(5);
    watcher.stop();
  }
  t.equal(liveTimers(), 1, 'one timer, not one per stream');
  advance(2000);
  t.equal(calls, 0, 'none fired');
});

t.test('idle watchers of one clock share one timer and still fire on time', async (t) => {
  const { clock, advance, liveTimers } = fakeClock();
  const firedAt: Record<string, number> = {};
  const watch = (name: string, ms: number) => watchIdle(ms, () => (firedAt[name] = clock.now()), clock);
  const busy = watch('busy', 1000);
  watch('quiet', 1000);
  watch('short', 300);
  const stopped = watch('stopped', 200);
  t.equal(liveTimers(), 1, 'four watchers, one timer');
  stopped.stop();
  for (let i = 0; i < 10; i++) {
    advance(250);
    busy.touch();
    t.ok(liveTimers() <= 1, 'never more than one timer');
  }
  t.equal(firedAt['short'], 300);
  t.equal(firedAt['quiet'], 1000);
  t.notOk('busy' in firedAt, 'a watcher touched every 250 ms does not idle at 1000 ms');
  t.notOk('stopped' in firedAt);
  advance(1000);
  t.equal(firedAt['busy'], 3500);
  t.equal(liveTimers(), 0, 'no timer once nothing is watched');
});

t.test('idle watchers stopped first, in the middle or last leave the others timed as before', async (t) => {
  const { clock, advance } = fakeClock();
  const fired: string[] = [];
  const watchers = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, watch: watchIdle(100, () => fired.push(name), clock) }));
  for (const { name, watch } of watchers) if (name === 'a' || name === 'c' || name === 'e') watch.stop();
  const late = watchIdle(100, () => fired.push('late'), clock);
  advance(50);
  late.touch();
  advance(50);
  t.same(fired, ['b', 'd'], 'the ones not stopped fire at their deadline');
  advance(50);
  t.same(fired, ['b', 'd', 'late'], 'one started after the stops is swept too');
});

t.test('an idle callback may start a new watcher', async (t) => {
  const { clock, advance, liveTimers } = fakeClock();
  let calls = 0;
  watchIdle(100, () => {
    calls++;
    watchIdle(100, () => calls++, clock);
  }, clock);
  advance(100);
  t.equal(calls, 1);
  t.equal(liveTimers(), 1, 'the new watcher is swept by the same timer');
  advance(100);
  t.equal(calls, 2);
  t.equal(liveTimers(), 0);
});

t.test('an idle watcher tells whether it was held (the reader silent) when it fired', async (t) => {
  const { clock, advance } = fakeClock();
  const fired: Record<string, boolean> = {};
  const held = watchIdle(100, (h) => (fired['held'] = h), clock);
  const released = watchIdle(100, (h) => (fired['released'] = h), clock);
  const plain = watchIdle(100, (h) => (fired['plain'] = h), clock);
  advance(60);
  held.hold();
  released.hold();
  plain.touch();
  advance(60);
  released.release();
  plain.touch();
  advance(39);
  t.same(fired, {}, 'holding counts the timeout from the hold, not from the last activity');
  advance(1);
  t.same(fired, { held: true }, 'a watcher held for the timeout fires as held');
  advance(60);
  t.same(fired, { held: true, released: false, plain: false }, 'a released one fires as the source going silent, the timeout counted from the release');
});

t.test('idle watcher with the system clock fires', async (t) => {
  // The watcher's timer is unref'd (an open socket keeps a real server alive); hold the loop here.
  const keepAlive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(keepAlive));
  await new Promise<void>((resolve) => watchIdle(5, () => resolve()));
  t.pass('fired');
});
