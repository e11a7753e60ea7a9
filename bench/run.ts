import { driveLoad, inTurn, loadSpecFor, mergeResults, type LoadResult } from './drive-load.ts';
import { forkBenchChild, peakRssBytes, type BenchChild } from './bench-child.ts';
import { nonStreamingRequest, streamingRequest } from './completions-fixtures.ts';
import { printMeasurements, printRatios, printRss, type Measurement } from './print-report.ts';
import { startSwitchyard, type BenchTarget } from './targets/switchyard.ts';

/**
 * `npm run bench`: a substitute upstream, the floor proxy and switchyard, each in its own
 * process on 127.0.0.1, driven with autocannon. For each scenario and connection count the
 * targets take turns: BENCH_ROUNDS rounds (3) of one BENCH_SECONDS run (3) per target, in a
 * rotated order, so that the figures compared in a ratio come from the same minutes of a
 * machine whose speed drifts.
 */
const SECONDS = Math.min(60, Math.max(1, Number(process.env['BENCH_SECONDS'] ?? 3)));
const ROUNDS = Math.min(20, Math.max(1, Math.trunc(Number(process.env['BENCH_ROUNDS'] ?? 3))));
const WARMUP_SECONDS = 1;
const SCENARIOS = [
  { scenario: 'non-streaming', body: nonStreamingRequest },
  { scenario: 'streaming', body: streamingRequest },
] as const;
const CONNECTIONS = [1, 32] as const;
/** BENCH_CEILING=1 adds the ceiling proxy (ceiling-proxy.ts) as a fourth target. */
const WITH_CEILING = process.env['BENCH_CEILING'] === '1';

interface Target {
  name: string;
  url: string;
  authHeader?: string;
}

async function main(): Promise<void> {
  const started: Array<{ close(): Promise<void> }> = [];
  try {
    const upstream: BenchChild = await forkBenchChild(new URL('./substitute-upstream.ts', import.meta.url));
    started.push(upstream);
    const floor: BenchChild = await forkBenchChild(new URL('./floor-proxy.ts', import.meta.url), [upstream.url]);
    started.push(floor);
    const targets: Target[] = [
      { name: 'direct', url: upstream.url },
      { name: 'floor', url: floor.url },
    ];
    if (WITH_CEILING) {
      const ceiling = await forkBenchChild(new URL('./ceiling-proxy.ts', import.meta.url), [upstream.url]);
      started.push(ceiling);
      targets.push({ name: 'ceiling', url: ceiling.url });
    }
    let switchyard: BenchTarget | undefined;
    try {
      switchyard = await startSwitchyard(upstream.url);
      started.push(switchyard);
      targets.push({ name: 'switchyard', url: switchyard.url, authHeader: switchyard.authHeader });
    } catch (error) {
      console.log(`notice: switchyard skipped: ${(error as Error).message}`);
    }

    console.log(`bench: ${ROUNDS} rounds of ${SECONDS} s per target (+${WARMUP_SECONDS} s warm-up), targets ${targets.map((t) => t.name).join(', ')}`);
    const measurements: Measurement[] = [];
    for (const { scenario, body } of SCENARIOS) {
      for (const connections of CONNECTIONS) {
        for (const target of targets) await driveLoad(loadSpecFor(target, body, connections, WARMUP_SECONDS));
        const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
        for (let round = 0; round < ROUNDS; round++) {
          const line: string[] = [];
          for (const target of inTurn(targets, round)) {
            const result = await driveLoad(loadSpecFor(target, body, connections, SECONDS));
            runs.get(target.name)!.push(result);
            line.push(`${target.name} ${result.requestsPerSecond.toFixed(0)}`);
          }
          console.log(`  ${scenario} @${connections} round ${round + 1}: ${line.join(', ')} req/s`);
        }
        for (const target of targets) measurements.push({ target: target.name, scenario, connections, result: mergeResults(runs.get(target.name)!) });
      }
    }

    const order = (m: Measurement) => targets.findIndex((t) => t.name === m.target);
    measurements.sort((a, b) => order(a) - order(b));
    const switchyardRss = switchyard?.pid === undefined ? undefined : peakRssBytes(switchyard.pid);
    printMeasurements(measurements);
    printRss([
      { process: 'upstream', bytes: peakRssBytes(upstream.pid) },
      { process: 'floor', bytes: peakRssBytes(floor.pid) },
      ...(switchyard === undefined ? [] : [{ process: 'switchyard', bytes: switchyardRss }]),
    ]);
    printRatios(measurements, switchyardRss);
  } finally {
    for (const s of started.reverse()) await s.close().catch(() => {});
  }
}

await main();
