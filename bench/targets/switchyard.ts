/**
 * The switchyard bench target. `startSwitchyard` starts switchyard (logging on) in front of
 * `upstreamUrl` with a group, a credential and an AccessKey for the completions protocol
 * and model `bench-model`. Run it as a child process (see forkBenchChild) and return its
 * pid so that run.ts can report its peak RSS.
 */
export interface BenchTarget {
  /** Base URL; the bench posts to `${url}/v1/chat/completions`. */
  url: string;
  /** Value of the Authorization header, e.g. `Bearer <AccessKey>`. */
  authHeader: string;
  close(): Promise<void>;
  /** Process id of the switchyard process, for its peak RSS. */
  pid?: number;
}

export async function startSwitchyard(upstreamUrl: string): Promise<BenchTarget> {
  throw new Error(`switchyard bench target not wired yet (upstream ${upstreamUrl}); see bench/targets/switchyard.ts`);
}
