import { forkBenchChild } from '../bench-child.ts';

/** The switchyard bench target, run in its own process so its peak RSS is its own. */
export interface BenchTarget {
  /** Base URL; the bench posts to `${url}/v1/chat/completions`. */
  url: string;
  /** Value of the Authorization header, e.g. `Bearer <AccessKey>`. */
  authHeader: string;
  /** Authorization header of the management API (the AUTH_KEY), to read the request logs. */
  managementAuthHeader: string;
  close(): Promise<void>;
  /** Process id of the switchyard process, for its peak RSS. */
  pid?: number;
}

export async function startSwitchyard(upstreamUrl: string): Promise<BenchTarget> {
  const child = await forkBenchChild(new URL('../switchyard-server.ts', import.meta.url), [upstreamUrl]);
  return { url: child.url, authHeader: String(child.announced['authHeader']), managementAuthHeader: String(child.announced['managementAuthHeader']), pid: child.pid, close: child.close };
}
