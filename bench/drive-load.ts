import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  authHeader?: string;
  body: string;
  connections: number;
  durationSeconds: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  /** Latency percentiles in ms, computed from every response's own timing. */
  p50: number;
  p99: number;
  completed: number;
  errors: number;
  non2xx: number;
  /** Seconds the run lasted. */
  seconds: number;
  /** Every 2xx response's time in ms, sorted: runs of one target are merged from these. */
  samples: number[];
}

/** The load for one target: its URL and, when it has one, its AccessKey. */
export function loadSpecFor(target: { url: string; authHeader?: string }, body: string, connections: number, durationSeconds: number): LoadSpec {
  return { url: target.url, body, connections, durationSeconds, ...(target.authHeader !== undefined ? { authHeader: target.authHeader } : {}) };
}

/** The targets in round `round`'s order: each round starts one later, so that no target always runs first. */
export function inTurn<T>(targets: readonly T[], round: number): T[] {
  const at = round % targets.length;
  return [...targets.slice(at), ...targets.slice(0, at)];
}

/**
 * Drives one target with autocannon. Latency percentiles come from the per-response times
 * autocannon reports (floating ms), because its summary histogram has 1 ms resolution, too
 * coarse for sub-millisecond loopback latencies.
 */
export async function driveLoad(spec: LoadSpec): Promise<LoadResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (spec.authHeader !== undefined) headers['authorization'] = spec.authHeader;
  const samples: number[] = [];
  const instance = autocannon({
    url: `${spec.url}/v1/chat/completions`,
    method: 'POST',
    headers,
    body: spec.body,
    connections: spec.connections,
    duration: spec.durationSeconds,
    timeout: 10,
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) samples.push(responseTime);
  });
  const result = await instance;
  samples.sort((a, b) => a - b);
  return summarize(samples, result.duration, result.errors, result.non2xx);
}

/** One result for several runs of the same target: throughput over their total time, percentiles over every response. */
export function mergeResults(results: LoadResult[]): LoadResult {
  const samples = results.flatMap((r) => r.samples).sort((a, b) => a - b);
  const sum = (f: (r: LoadResult) => number) => results.reduce((total, r) => total + f(r), 0);
  return summarize(samples, sum((r) => r.seconds), sum((r) => r.errors), sum((r) => r.non2xx));
}

function summarize(sorted: number[], seconds: number, errors: number, non2xx: number): LoadResult {
  return {
    requestsPerSecond: sorted.length / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    completed: sorted.length,
    errors,
    non2xx,
    seconds,
    samples: sorted,
  };
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
