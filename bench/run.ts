import { driveLoad } from './drive-load.ts';
import { forkBenchChild, peakRssBytes, type BenchChild } from './bench-child.ts';
import { nonStreamingRequest, streamingRequest } from './completions-fixtures.ts';
import { printMeasurements, printRatios, printRss, type Measurement } from './print-report.ts';
import { startSwitchyard, type BenchTarget } from './targets/switchyard.ts';

/**
 * `npm run bench`: a substitute upstream, the floor proxy and switchyard, each in its own
 * process on 127.0.0.1, driven with autocannon. BENCH_SECONDS sets each run's length (5).
 */
const SECONDS = Math.min(60, Math.max(1, Number(process.env['BENCH_SECONDS'] ?? 5)));
const WARMUP_SECONDS = 1;
const SCENARIOS = [
  { scenario: 'non-streaming', body: nonStreamingRequest },
  { scenario: 'streaming', body: streamingRequest },
] as const;
const CONNECTIONS = [1, 32] as const;

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
    let switchyard: BenchTarget | undefined;
    try {
      switchyard = await startSwitchyard(upstream.url);
      started.push(switchyard);
      targets.push({ name: 'switchyard', url: switchyard.url, authHeader: switchyard.authHeader });
    } catch (error) {
      console.log(`notice: switchyard skipped: ${(error as Error).message}`);
    }

    console.log(`bench: ${SECONDS} s per run (+${WARMUP_SECONDS} s warm-up), targets ${targets.map((t) => t.name).join(', ')}`);
    const measurements: Measurement[] = [];
    for (const target of targets) {
      for (const { scenario, body } of SCENARIOS) {
        for (const connections of CONNECTIONS) {
          const spec = { url: target.url, body, connections, ...(target.authHeader !== undefined ? { authHeader: target.authHeader } : {}) };
          await driveLoad({ ...spec, durationSeconds: WARMUP_SECONDS });
          const result = await driveLoad({ ...spec, durationSeconds: SECONDS });
          measurements.push({ target: target.name, scenario, connections, result });
          console.log(`  ${target.name} ${scenario} @${connections}: ${result.requestsPerSecond.toFixed(0)} req/s`);
        }
      }
    }

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
