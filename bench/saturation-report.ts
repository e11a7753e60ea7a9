import { median } from './median.ts';

/** One run of one target at saturation: its throughput and its main thread's CPU time. */
export interface SaturationRun {
  requestsPerSecond: number;
  completed: number;
  /** CPU time (user + system) the target's main thread used during the run, in ms. */
  mainThreadCpuMs: number;
}

export interface SaturationSummary {
  target: string;
  requestsPerSecond: number;
  /** Median of each round's ratio to the reference target's run of the same round. */
  ratio: number;
  /** Median main-thread CPU time per request, in µs. */
  mainThreadMicrosPerRequest: number;
}

/**
 * Medians per target over rounds. Ratios are paired: each round's run against the reference's
 * run of the same round, because this machine's speed drifts between rounds more than builds
 * differ within one.
 */
export function summarizeSaturation(runs: ReadonlyMap<string, readonly SaturationRun[]>, reference: string): SaturationSummary[] {
  const base = runs.get(reference);
  if (base === undefined) throw new Error(`no runs of the reference target ${reference}`);
  return [...runs].map(([target, own]) => ({
    target,
    requestsPerSecond: median(own.map((r) => r.requestsPerSecond)),
    ratio: median(own.map((r, round) => r.requestsPerSecond / base[round]!.requestsPerSecond)),
    mainThreadMicrosPerRequest: median(own.map((r) => (r.completed === 0 ? Number.NaN : (r.mainThreadCpuMs * 1000) / r.completed))),
  }));
}

/**
 * CPU time of a thread in clock ticks (utime + stime), from the text of its
 * /proc/<pid>/task/<tid>/stat. The command name in parentheses may hold spaces and
 * parentheses itself, so fields are counted from its last ')'.
 */
export function threadCpuTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5), counted from the state (field 3) here.
  return Number(fields[11]) + Number(fields[12]);
}
