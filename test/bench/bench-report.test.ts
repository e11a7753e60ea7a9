import t from 'tap';
import { inTurn, loadSpecFor, mergeResults, type LoadResult } from '../../bench/drive-load.ts';
import { addedP50, checkTargets, type Measurement } from '../../bench/print-report.ts';

/** A run that completed one response per sample (latencies in ms) in `seconds`. */
function run(samples: number[], seconds: number, errors = 0, non2xx = 0): LoadResult {
  const sorted = [...samples].sort((a, b) => a - b);
  return { requestsPerSecond: sorted.length / seconds, p50: Number.NaN, p99: Number.NaN, completed: sorted.length, errors, non2xx, seconds, samples: sorted };
}

/** A result with the given throughput and p50, for checkTargets. */
function result(requestsPerSecond: number, p50: number): LoadResult {
  return { requestsPerSecond, p50, p99: p50, completed: 1, errors: 0, non2xx: 0, seconds: 1, samples: [p50] };
}

function measurements(figures: Record<string, { rps32: number; p50: number }>, scenario = 'non-streaming'): Measurement[] {
  return Object.entries(figures).flatMap(([target, f]) => [
    { target, scenario, connections: 32, result: result(f.rps32, 9) },
    { target, scenario, connections: 1, result: result(100, f.p50) },
  ]);
}

t.test('merged runs: throughput over the total time, percentiles over every response, errors summed', async (t) => {
  const merged = mergeResults([run([4, 1, 3], 2, 1, 0), run([2, 5, 6, 7, 8, 9, 10, 11], 3, 0, 2)]);
  t.equal(merged.completed, 11);
  t.equal(merged.seconds, 5);
  t.equal(merged.requestsPerSecond, 11 / 5);
  t.same(merged.samples, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  t.equal(merged.p50, 6, 'the sixth of eleven sorted samples');
  t.equal(merged.p99, 11);
  t.equal(merged.errors, 1);
  t.equal(merged.non2xx, 2);
});

t.test('a run without responses has no percentiles', async (t) => {
  const merged = mergeResults([run([], 3)]);
  t.equal(merged.requestsPerSecond, 0);
  t.ok(Number.isNaN(merged.p50) && Number.isNaN(merged.p99));
});

t.test('issue 4 targets are computed from the figures and judged against their thresholds', async (t) => {
  const checks = checkTargets(
    measurements({ direct: { rps32: 20_000, p50: 0.2 }, floor: { rps32: 8_000, p50: 0.4 }, switchyard: { rps32: 6_000, p50: 0.5 } }),
    150 * 1024 * 1024,
  );
  const byMeasure = new Map(checks.map((c) => [`${c.scenario} ${c.measure}`, c]));
  const vsFloor = byMeasure.get('non-streaming switchyard/floor throughput @32')!;
  t.equal(vsFloor.value, 0.75);
  t.equal(vsFloor.met, true, 'exactly 0.75 meets ">= 0.75"');
  const vsDirect = byMeasure.get('non-streaming switchyard/direct throughput @32')!;
  t.equal(vsDirect.value, 0.3);
  t.equal(vsDirect.met, true);
  const p50 = byMeasure.get("non-streaming switchyard added p50 @1 against the floor's")!;
  t.ok(Math.abs(p50.value - 1.5) < 1e-9, 'switchyard adds 0.3 ms where the floor adds 0.2');
  t.equal(p50.met, true);
  const rss = byMeasure.get('memory switchyard peak RSS')!;
  t.equal(rss.value, 150);
  t.equal(rss.met, true);
  t.equal(checks.length, 4, 'no streaming figures, no streaming checks');
});

t.test('targets just past their thresholds are missed', async (t) => {
  const checks = checkTargets(
    measurements({ direct: { rps32: 30_000, p50: 0.2 }, floor: { rps32: 10_000, p50: 0.4 }, switchyard: { rps32: 7_400, p50: 0.51 } }, 'streaming'),
    200 * 1024 * 1024,
  );
  t.same(
    checks.map((c) => [c.scenario, c.measure, c.met]),
    [
      ['streaming', 'switchyard/floor throughput @32', false],
      ['streaming', 'switchyard/direct throughput @32', false],
      ['streaming', "switchyard added p50 @1 against the floor's", false],
      ['memory', 'switchyard peak RSS', false],
    ],
  );
});

t.test('when the floor adds no latency, only a switchyard that adds none meets the latency target', async (t) => {
  const none = checkTargets(measurements({ direct: { rps32: 1, p50: 0.3 }, floor: { rps32: 1, p50: 0.3 }, switchyard: { rps32: 1, p50: 0.3 } }), undefined);
  const some = checkTargets(measurements({ direct: { rps32: 1, p50: 0.3 }, floor: { rps32: 1, p50: 0.3 }, switchyard: { rps32: 1, p50: 0.31 } }), undefined);
  const latency = (checks: ReturnType<typeof checkTargets>) => checks.find((c) => c.measure.startsWith('switchyard added p50'))!;
  t.equal(latency(none).met, true);
  t.equal(latency(some).met, false);
  t.ok(Number.isNaN(latency(some).value), 'no ratio to a zero');
  t.notOk(none.some((c) => c.scenario === 'memory'), 'no RSS check without an RSS figure');
});

t.test('without a switchyard run there is nothing to judge', async (t) => {
  t.same(checkTargets(measurements({ direct: { rps32: 20_000, p50: 0.2 }, floor: { rps32: 8_000, p50: 0.4 } }), 100), []);
});

t.test('targets take turns: each round starts one later, every target once per round', async (t) => {
  const targets = ['direct', 'floor', 'switchyard'];
  t.same(inTurn(targets, 0), ['direct', 'floor', 'switchyard']);
  t.same(inTurn(targets, 1), ['floor', 'switchyard', 'direct']);
  t.same(inTurn(targets, 2), ['switchyard', 'direct', 'floor']);
  t.same(inTurn(targets, 4), ['floor', 'switchyard', 'direct'], 'round 4 of 3 targets is round 1 again');
  t.same(targets, ['direct', 'floor', 'switchyard'], 'the list itself is left as it was');
});

t.test('a load spec carries the AccessKey only for a target that has one', async (t) => {
  t.same(loadSpecFor({ url: 'http://127.0.0.1:1' }, '{}', 32, 3), { url: 'http://127.0.0.1:1', body: '{}', connections: 32, durationSeconds: 3 });
  t.same(loadSpecFor({ url: 'http://127.0.0.1:2', authHeader: 'Bearer k' }, '{}', 1, 1), { url: 'http://127.0.0.1:2', body: '{}', connections: 1, durationSeconds: 1, authHeader: 'Bearer k' });
});

t.test('added p50: a target minus direct at 1 connection, in its scenario; none without both figures', async (t) => {
  const figures = [...measurements({ direct: { rps32: 100, p50: 0.1 }, floor: { rps32: 50, p50: 0.25 } }), ...measurements({ direct: { rps32: 90, p50: 0.2 }, floor: { rps32: 40, p50: 0.5 } }, 'streaming')];
  t.equal(addedP50(figures, 'floor', 'non-streaming'), 0.15);
  t.equal(addedP50(figures, 'floor', 'streaming'), 0.3);
  t.equal(addedP50(figures, 'switchyard', 'streaming'), undefined, 'no switchyard figures');
  t.equal(addedP50(figures.filter((m) => m.target !== 'direct'), 'floor', 'streaming'), undefined, 'no direct figures');
});
