import type { LoadResult } from './drive-load.ts';

export interface Measurement {
  target: string;
  scenario: string;
  connections: number;
  result: LoadResult;
}

/** Issue 4 targets for switchyard. */
const THROUGHPUT_VS_FLOOR = 0.75;
const THROUGHPUT_VS_DIRECT = 0.25;
const ADDED_P50_VS_FLOOR = 1.5;
const RSS_LIMIT_MB = 200;

const pad = (value: string, width: number) => value.padStart(width);
const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(3) : 'n/a');

export function printMeasurements(measurements: Measurement[]): void {
  console.log('\n target      scenario        conns      req/s    p50 ms    p99 ms   errors  non2xx');
  for (const m of measurements) {
    console.log(
      ` ${m.target.padEnd(11)} ${m.scenario.padEnd(14)} ${pad(String(m.connections), 6)} ${pad(m.result.requestsPerSecond.toFixed(0), 10)} ${pad(ms(m.result.p50), 9)} ${pad(ms(m.result.p99), 9)} ${pad(String(m.result.errors), 8)} ${pad(String(m.result.non2xx), 7)}`,
    );
  }
}

export function printRss(rss: Array<{ process: string; bytes: number | undefined }>): void {
  console.log('\n process      peak RSS (VmHWM)');
  for (const r of rss) {
    console.log(` ${r.process.padEnd(12)} ${r.bytes === undefined ? 'n/a' : `${(r.bytes / 1024 / 1024).toFixed(1)} MB`}`);
  }
}

function find(measurements: Measurement[], target: string, scenario: string, connections: number): LoadResult | undefined {
  return measurements.find((m) => m.target === target && m.scenario === scenario && m.connections === connections)?.result;
}

/**
 * Ratios of issue 4: switchyard/floor and switchyard/direct throughput at 32 connections;
 * latency added at 1 connection (p50 minus direct's p50), switchyard's against the floor's.
 * Without a switchyard run, the floor's own figures against direct are shown for reference.
 */
export function printRatios(measurements: Measurement[], switchyardRssBytes: number | undefined): void {
  const hasSwitchyard = measurements.some((m) => m.target === 'switchyard');
  console.log('\n ratios');
  for (const scenario of ['non-streaming', 'streaming']) {
    const direct32 = find(measurements, 'direct', scenario, 32);
    const floor32 = find(measurements, 'floor', scenario, 32);
    const direct1 = find(measurements, 'direct', scenario, 1);
    const floor1 = find(measurements, 'floor', scenario, 1);
    if (direct32 && floor32) {
      console.log(`  ${scenario}: floor/direct throughput @32 = ${(floor32.requestsPerSecond / direct32.requestsPerSecond).toFixed(2)}`);
    }
    if (direct1 && floor1) console.log(`  ${scenario}: floor added p50 @1 = ${ms(floor1.p50 - direct1.p50)} ms`);
    const ceiling32 = find(measurements, 'ceiling', scenario, 32);
    if (ceiling32 && floor32) console.log(`  ${scenario}: ceiling/floor throughput @32 = ${(ceiling32.requestsPerSecond / floor32.requestsPerSecond).toFixed(2)} (diagnostic, no target)`);
    if (!hasSwitchyard) continue;
    const sy32 = find(measurements, 'switchyard', scenario, 32);
    const sy1 = find(measurements, 'switchyard', scenario, 1);
    if (sy32 && ceiling32) console.log(`  ${scenario}: switchyard/ceiling throughput @32 = ${(sy32.requestsPerSecond / ceiling32.requestsPerSecond).toFixed(2)} (diagnostic, no target)`);
    if (sy32 && floor32 && direct32) {
      const vsFloor = sy32.requestsPerSecond / floor32.requestsPerSecond;
      const vsDirect = sy32.requestsPerSecond / direct32.requestsPerSecond;
      console.log(`  ${scenario}: switchyard/floor throughput @32 = ${vsFloor.toFixed(2)} ${verdict(vsFloor >= THROUGHPUT_VS_FLOOR, `>= ${THROUGHPUT_VS_FLOOR}`)}`);
      console.log(`  ${scenario}: switchyard/direct throughput @32 = ${vsDirect.toFixed(2)} ${verdict(vsDirect >= THROUGHPUT_VS_DIRECT, `>= ${THROUGHPUT_VS_DIRECT}`)}`);
    }
    if (sy1 && floor1 && direct1) {
      const floorAdded = floor1.p50 - direct1.p50;
      const syAdded = sy1.p50 - direct1.p50;
      const ratio = syAdded / floorAdded;
      console.log(
        `  ${scenario}: switchyard added p50 @1 = ${ms(syAdded)} ms, ${floorAdded > 0 ? `${ratio.toFixed(2)}x the floor's` : 'floor added none'} ${verdict(floorAdded > 0 ? ratio <= ADDED_P50_VS_FLOOR : syAdded <= 0, `<= ${ADDED_P50_VS_FLOOR}x`)}`,
      );
    }
  }
  if (hasSwitchyard && switchyardRssBytes !== undefined) {
    const mb = switchyardRssBytes / 1024 / 1024;
    console.log(`  switchyard peak RSS = ${mb.toFixed(1)} MB ${verdict(mb < RSS_LIMIT_MB, `< ${RSS_LIMIT_MB} MB`)}`);
  }
}

function verdict(ok: boolean, target: string): string {
  return ok ? `(ok, target ${target})` : `(MISSED, target ${target})`;
}
