import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { driveLoad, inTurn, loadSpecFor, mergeResults, type LoadResult } from './drive-load.ts';
import { startBenchProcesses } from './bench-processes.ts';
import { nonStreamingRequest, streamingRequest } from './completions-fixtures.ts';
import { PLACEMENTS, cpuList, type BenchRole, type Placement } from './placements.ts';
import { addedP50, checkTargets, type Measurement } from './print-report.ts';

/**
 * `npm run bench:placement`: the p50 that the floor and switchyard add at 1 connection, as
 * `npm run bench` measures it, once with the processes where the scheduler puts them and once
 * in each way of pinning the load generator (this process), the proxy and the upstream to two
 * CPUs (`taskset`, Linux). A diagnostic, no target: it shows how much of the figure comes from
 * which processes share a CPU. BENCH_ROUNDS (3) rounds of BENCH_SECONDS (2) per target.
 */
const SECONDS = Math.min(60, Math.max(1, Number(process.env['BENCH_SECONDS'] ?? 2)));
const ROUNDS = Math.min(20, Math.max(1, Math.trunc(Number(process.env['BENCH_ROUNDS'] ?? 3))));
const SCENARIOS = [
  { scenario: 'non-streaming', body: nonStreamingRequest },
  { scenario: 'streaming', body: streamingRequest },
] as const;

interface Target {
  name: string;
  url: string;
  authHeader?: string;
  role: BenchRole;
  pid: number;
}

/** Pins every thread of a process (`taskset -a`), so a worker thread cannot run elsewhere. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

async function measure(targets: Target[], placement: Placement, cpuCount: number): Promise<Measurement[]> {
  pin(process.pid, cpuList(placement, 'driver', cpuCount));
  for (const target of targets) pin(target.pid, cpuList(placement, target.role, cpuCount));
  const measurements: Measurement[] = [];
  for (const { scenario, body } of SCENARIOS) {
    for (const target of targets) await driveLoad(loadSpecFor(target, body, 1, 1));
    const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of inTurn(targets, round)) runs.get(target.name)!.push(await driveLoad(loadSpecFor(target, body, 1, SECONDS)));
    }
    for (const target of targets) measurements.push({ target: target.name, scenario, connections: 1, result: mergeResults(runs.get(target.name)!) });
  }
  return measurements;
}

async function main(): Promise<void> {
  const cpuCount = availableParallelism();
  if (cpuCount < 2) throw new Error('bench:placement needs two CPUs');
  const started: Array<{ close(): Promise<void> }> = [];
  try {
    const { upstream, floor, switchyard } = await startBenchProcesses(started);
    const targets: Target[] = [
      { name: 'direct', url: upstream.url, role: 'upstream', pid: upstream.pid },
      { name: 'floor', url: floor.url, role: 'proxy', pid: floor.pid },
      { name: 'switchyard', url: switchyard.url, authHeader: switchyard.authHeader, role: 'proxy', pid: switchyard.pid! },
    ];
    console.log(`placement: p50 added at 1 connection, ${ROUNDS} rounds of ${SECONDS} s per target and placement`);
    // Non-streaming at 32 connections first, as the bench runs before any 1-connection figure.
    for (const target of targets) await driveLoad(loadSpecFor(target, nonStreamingRequest, 32, 2));
    console.log('\n placement                  scenario         floor ms  switchyard ms  switchyard/floor');
    for (const placement of PLACEMENTS) {
      const measurements = await measure(targets, placement, cpuCount);
      for (const check of checkTargets(measurements, undefined)) {
        const added = (name: string) => addedP50(measurements, name, check.scenario)!;
        console.log(` ${placement.name.padEnd(26)} ${check.scenario.padEnd(14)} ${added('floor').toFixed(3).padStart(10)} ${added('switchyard').toFixed(3).padStart(14)} ${check.value.toFixed(2).padStart(17)}`);
      }
    }
  } finally {
    for (const s of started.reverse()) await s.close().catch(() => {});
  }
}

await main();
