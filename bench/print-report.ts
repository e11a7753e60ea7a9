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
const SCENARIOS = ['non-streaming', 'streaming'] as const;
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

/** The p50 a target adds at 1 connection: its p50 minus direct's, in ms; undefined without both figures. */
export function addedP50(measurements: Measurement[], target: string, scenario: string): number | undefined {
  const direct = find(measurements, 'direct', scenario, 1);
  const own = find(measurements, target, scenario, 1);
  return direct && own ? own.p50 - direct.p50 : undefined;
}

/** One of issue 4's targets for switchyard, as measured. */
export interface TargetCheck {
  /** `non-streaming`, `streaming`, or `memory` for peak RSS. */
  scenario: string;
  /** What is compared, e.g. `switchyard/floor throughput @32`. */
  measure: string;
  value: number;
  /** The target as written in issue 4, e.g. `>= 0.75`. */
  target: string;
  met: boolean;
  /** Printed after the value (the unit, or how the value was formed). */
  detail: string;
}

/**
 * Issue 4's targets: switchyard/floor and switchyard/direct throughput at 32 connections; the
 * p50 added at 1 connection (target minus direct), switchyard's against the floor's; peak RSS.
 * A target whose figures are missing is left out.
 */
export function checkTargets(measurements: Measurement[], switchyardRssBytes: number | undefined): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const scenario of SCENARIOS) {
    const direct32 = find(measurements, 'direct', scenario, 32);
    const floor32 = find(measurements, 'floor', scenario, 32);
    const sy32 = find(measurements, 'switchyard', scenario, 32);
    if (sy32 && floor32 && direct32) {
      const vsFloor = sy32.requestsPerSecond / floor32.requestsPerSecond;
      const vsDirect = sy32.requestsPerSecond / direct32.requestsPerSecond;
      checks.push({ scenario, measure: 'switchyard/floor throughput @32', value: vsFloor, target: `>= ${THROUGHPUT_VS_FLOOR}`, met: vsFloor >= THROUGHPUT_VS_FLOOR, detail: '' });
      checks.push({ scenario, measure: 'switchyard/direct throughput @32', value: vsDirect, target: `>= ${THROUGHPUT_VS_DIRECT}`, met: vsDirect >= THROUGHPUT_VS_DIRECT, detail: '' });
    }
    const floorAdded = addedP50(measurements, 'floor', scenario);
    const syAdded = addedP50(measurements, 'switchyard', scenario);
    if (floorAdded !== undefined && syAdded !== undefined) {
      // With no latency added by the floor, only a switchyard that adds none either meets it.
      const value = floorAdded > 0 ? syAdded / floorAdded : Number.NaN;
      const met = floorAdded > 0 ? value <= ADDED_P50_VS_FLOOR : syAdded <= 0;
      const detail = `(${ms(syAdded)} ms added, ${floorAdded > 0 ? `the floor ${ms(floorAdded)} ms` : 'the floor none'})`;
      checks.push({ scenario, measure: "switchyard added p50 @1 against the floor's", value, target: `<= ${ADDED_P50_VS_FLOOR}x`, met, detail });
    }
  }
  if (switchyardRssBytes !== undefined && measurements.some((m) => m.target === 'switchyard')) {
    const mb = switchyardRssBytes / 1024 / 1024;
    checks.push({ scenario: 'memory', measure: 'switchyard peak RSS', value: mb, target: `< ${RSS_LIMIT_MB} MB`, met: mb < RSS_LIMIT_MB, detail: 'MB' });
  }
  return checks;
}

/**
 * The floor's own figures against direct, the ceiling's diagnostic ratios when it ran, then
 * issue 4's targets with their verdicts.
 */
export function printRatios(measurements: Measurement[], switchyardRssBytes: number | undefined): void {
  console.log('\n ratios');
  for (const scenario of SCENARIOS) {
    const direct32 = find(measurements, 'direct', scenario, 32);
    const floor32 = find(measurements, 'floor', scenario, 32);
    const floorAdded = addedP50(measurements, 'floor', scenario);
    if (direct32 && floor32) {
      console.log(`  ${scenario}: floor/direct throughput @32 = ${(floor32.requestsPerSecond / direct32.requestsPerSecond).toFixed(2)}`);
    }
    if (floorAdded !== undefined) console.log(`  ${scenario}: floor added p50 @1 = ${ms(floorAdded)} ms`);
    const ceiling32 = find(measurements, 'ceiling', scenario, 32);
    const sy32 = find(measurements, 'switchyard', scenario, 32);
    if (ceiling32 && floor32) console.log(`  ${scenario}: ceiling/floor throughput @32 = ${(ceiling32.requestsPerSecond / floor32.requestsPerSecond).toFixed(2)} (diagnostic, no target)`);
    if (sy32 && ceiling32) console.log(`  ${scenario}: switchyard/ceiling throughput @32 = ${(sy32.requestsPerSecond / ceiling32.requestsPerSecond).toFixed(2)} (diagnostic, no target)`);
  }
  for (const check of checkTargets(measurements, switchyardRssBytes)) {
    const value = Number.isFinite(check.value) ? check.value.toFixed(check.scenario === 'memory' ? 1 : 2) : 'n/a';
    console.log(`  ${check.scenario}: ${check.measure} = ${value}${check.detail ? ` ${check.detail}` : ''} ${check.met ? '(ok' : '(MISSED'}, target ${check.target})`);
  }
}
