/** The three processes of a bench run: the load generator (the bench itself), the proxy under test, the substitute upstream. */
export type BenchRole = 'driver' | 'proxy' | 'upstream';

/** Where each process runs: one CPU each, two of them sharing one, or wherever the scheduler puts them. */
export interface Placement {
  name: string;
  /** CPU of each role; absent when the scheduler places every process. */
  cpuOf?: Readonly<Record<BenchRole, number>>;
}

/**
 * The scheduler's own choice, as `npm run bench` runs, then the three ways of putting three
 * processes on two CPUs. On this machine a hand-over between processes on two CPUs costs
 * tens of µs more than one on the same CPU, so which pair shares a CPU moves the latency each
 * proxy adds (docs/data-plane-internals.md, Benchmark).
 */
export const PLACEMENTS: readonly Placement[] = [
  { name: 'scheduler' },
  { name: 'driver+proxy | upstream', cpuOf: { driver: 0, proxy: 0, upstream: 1 } },
  { name: 'driver+upstream | proxy', cpuOf: { driver: 0, upstream: 0, proxy: 1 } },
  { name: 'proxy+upstream | driver', cpuOf: { proxy: 0, upstream: 0, driver: 1 } },
];

/** The CPU list `taskset -c` takes for a role: its own CPU, or all `cpuCount` CPUs when the scheduler places it. */
export function cpuList(placement: Placement, role: BenchRole, cpuCount: number): string {
  if (placement.cpuOf === undefined) return cpuCount > 1 ? `0-${cpuCount - 1}` : '0';
  const cpu = placement.cpuOf[role];
  if (cpu >= cpuCount) throw new Error(`placement "${placement.name}" needs CPU ${cpu}; this machine has ${cpuCount}`);
  return String(cpu);
}
