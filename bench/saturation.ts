import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { driveLoad, inTurn, loadSpecFor } from './drive-load.ts';
import { forkBuiltChild } from './bench-child.ts';
import { startBenchProcesses } from './bench-processes.ts';
import { nonStreamingRequest, streamingRequest } from './completions-fixtures.ts';
import { summarizeSaturation, threadCpuTicks, type SaturationRun } from './saturation-report.ts';

/**
 * `npm run bench:saturation [-- name=bundle.mjs ...]`: the floor, switchyard as built from this
 * tree, and any other bundled builds named on the command line (each announcing its port and
 * AccessKey as bench/switchyard-server.ts does), driven at saturation in turns. It prints each
 * target's requests per second, its ratio to the floor and its main thread's CPU time per
 * request (Linux /proc), medians over the rounds. This is how the Benchmark section of
 * docs/data-plane-internals.md compares builds that each leave something out: the main
 * thread's CPU per request moves less between runs than throughput does.
 */
const ROUNDS = Math.min(20, Math.max(1, Math.trunc(Number(process.env['BENCH_ROUNDS'] ?? 5))));
const SECONDS = Math.min(60, Math.max(1, Number(process.env['BENCH_SECONDS'] ?? 3)));
const CONNECTIONS = Math.max(1, Math.trunc(Number(process.env['BENCH_CONNECTIONS'] ?? 32)));
const STREAMING = (process.env['BENCH_SCENARIO'] ?? 'streaming') !== 'non-streaming';
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

interface Target {
  name: string;
  url: string;
  pid: number;
  authHeader?: string;
}

/** `name=path/to/bundle.mjs`, or a bundle's path alone (named after its file). */
function namedBundle(argument: string): { name: string; file: string } {
  const at = argument.indexOf('=');
  const file = path.resolve(at === -1 ? argument : argument.slice(at + 1));
  return { name: at === -1 ? path.basename(file, '.mjs') : argument.slice(0, at), file };
}

function mainThreadCpuMs(pid: number): number {
  return (threadCpuTicks(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')) * 1000) / TICKS_PER_SECOND;
}

async function main(): Promise<void> {
  const started: Array<{ close(): Promise<void> }> = [];
  try {
    const { upstream, floor, switchyard } = await startBenchProcesses(started);
    const targets: Target[] = [
      { name: 'floor', url: floor.url, pid: floor.pid },
      { name: 'switchyard', url: switchyard.url, pid: switchyard.pid!, authHeader: switchyard.authHeader },
    ];
    for (const argument of process.argv.slice(2)) {
      const { name, file } = namedBundle(argument);
      if (!existsSync(file)) throw new Error(`no bundle at ${file}`);
      if (targets.some((t) => t.name === name)) throw new Error(`a target is already named ${name}: give the bundle another name (other=${file})`);
      const child = await forkBuiltChild(file, [upstream.url]);
      started.push(child);
      targets.push({ name, url: child.url, pid: child.pid, authHeader: String(child.announced['authHeader']) });
    }
    const body = STREAMING ? streamingRequest : nonStreamingRequest;
    console.log(`saturation: ${STREAMING ? 'streaming' : 'non-streaming'} at ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per target`);
    // Non-streaming first, as the bench runs, then the scenario itself.
    for (const target of targets) await driveLoad(loadSpecFor(target, nonStreamingRequest, CONNECTIONS, 2));
    for (const target of targets) await driveLoad(loadSpecFor(target, body, CONNECTIONS, 1));
    const runs = new Map<string, SaturationRun[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const line: string[] = [];
      for (const target of inTurn(targets, round)) {
        const before = mainThreadCpuMs(target.pid);
        const result = await driveLoad(loadSpecFor(target, body, CONNECTIONS, SECONDS));
        const run = { requestsPerSecond: result.requestsPerSecond, completed: result.completed, mainThreadCpuMs: mainThreadCpuMs(target.pid) - before };
        runs.get(target.name)!.push(run);
        // Only answers in 2xx count: a build that refuses fast must not look cheap.
        const failed = result.errors + result.non2xx;
        line.push(`${target.name} ${run.requestsPerSecond.toFixed(0)} req/s ${((run.mainThreadCpuMs * 1000) / run.completed).toFixed(1)} µs${failed > 0 ? ` (${failed} failed)` : ''}`);
      }
      console.log(`  round ${round + 1}: ${line.join(', ')}`);
    }
    console.log('\n target              req/s   /floor   main-thread µs per request (medians)');
    for (const s of summarizeSaturation(runs, 'floor')) {
      console.log(` ${s.target.padEnd(16)} ${s.requestsPerSecond.toFixed(0).padStart(8)} ${s.ratio.toFixed(3).padStart(8)} ${s.mainThreadMicrosPerRequest.toFixed(1).padStart(10)}`);
    }
  } finally {
    for (const s of started.reverse()) await s.close().catch(() => {});
  }
}

await main();
