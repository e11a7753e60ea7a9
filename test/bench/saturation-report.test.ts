import { readFileSync } from 'node:fs';
import t from 'tap';
import { median } from '../../bench/median.ts';
import { summarizeSaturation, threadCpuTicks, type SaturationRun } from '../../bench/saturation-report.ts';

const run = (requestsPerSecond: number, completed: number, mainThreadCpuMs: number): SaturationRun => ({ requestsPerSecond, completed, mainThreadCpuMs });

t.test('median: the middle value, the mean of the middle two, NaN for none', async (t) => {
  t.equal(median([5, 1, 3]), 3);
  t.equal(median([4, 1, 3, 10]), 3.5);
  t.ok(Number.isNaN(median([])));
});

t.test('medians per target: throughput, ratio to the reference, main-thread CPU per request', async (t) => {
  // The machine slows down in round 2: each round's ratio is 0.8, the ratio of medians is not.
  const runs = new Map([
    ['floor', [run(100, 300, 30), run(50, 150, 15), run(90, 270, 27)]],
    ['build', [run(80, 240, 36), run(40, 120, 18), run(72, 216, 32.4)]],
  ]);
  const [floor, build] = summarizeSaturation(runs, 'floor');
  t.equal(floor!.ratio, 1);
  t.equal(build!.target, 'build');
  t.equal(build!.requestsPerSecond, 72);
  t.equal(build!.ratio, 0.8, 'every round at 0.8 of the floor');
  t.equal(build!.mainThreadMicrosPerRequest, 150, '36 ms over 240 requests');
  t.equal(floor!.mainThreadMicrosPerRequest, 100);
});

t.test('a pairing that the ratio of medians would get wrong', async (t) => {
  const runs = new Map([
    ['floor', [run(100, 1, 0), run(10, 1, 0), run(50, 1, 0)]],
    ['build', [run(20, 1, 0), run(9, 1, 0), run(45, 1, 0)]],
  ]);
  const build = summarizeSaturation(runs, 'floor')[1]!;
  t.equal(build.ratio, 0.9, 'per-round ratios 0.2, 0.9, 0.9');
  t.equal(build.requestsPerSecond, 20, 'the median throughput, which over the floor’s (50) would say 0.4');
});

t.test('a run that completed nothing has no CPU per request; a missing reference is an error', async (t) => {
  const summary = summarizeSaturation(new Map([['floor', [run(0, 0, 12)]]]), 'floor');
  t.ok(Number.isNaN(summary[0]!.mainThreadMicrosPerRequest));
  t.throws(() => summarizeSaturation(new Map([['build', [run(1, 1, 1)]]]), 'floor'), /reference target floor/);
});

t.test('thread CPU ticks: utime plus stime, counted past a command name with spaces and parentheses', async (t) => {
  const stat = '4242 (node (worker) 1) R 1 4242 4242 0 -1 4194560 500 0 0 0 250 17 3 4 20 0 11 0 100 1000000 2000';
  t.equal(threadCpuTicks(stat), 267, 'utime 250 + stime 17, not the children’s 3 and 4');
  if (process.platform === 'linux') {
    const own = threadCpuTicks(readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8'));
    t.ok(Number.isInteger(own) && own >= 0, `this process's main thread: ${own} ticks`);
  }
});
