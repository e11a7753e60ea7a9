import { forkBenchChild, type BenchChild } from './bench-child.ts';
import { startSwitchyard, type BenchTarget } from './targets/switchyard.ts';

export interface BenchProcesses {
  upstream: BenchChild;
  floor: BenchChild;
  switchyard: BenchTarget;
}

/**
 * The substitute upstream, the floor and switchyard, each in its own process. Each one is
 * added to `started` as soon as it runs, so that the caller stops it even when a later one
 * fails to start.
 */
export async function startBenchProcesses(started: Array<{ close(): Promise<void> }>): Promise<BenchProcesses> {
  const upstream = await forkBenchChild(new URL('./substitute-upstream.ts', import.meta.url));
  started.push(upstream);
  const floor = await forkBenchChild(new URL('./floor-proxy.ts', import.meta.url), [upstream.url]);
  started.push(floor);
  const switchyard = await startSwitchyard(upstream.url);
  started.push(switchyard);
  return { upstream, floor, switchyard };
}
