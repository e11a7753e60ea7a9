import { forkBenchChild } from '../bench-child.ts';

/** The V8 flags `npm start` runs the gateway with (package.json): a small young generation keeps peak RSS low under load. */
const SERVE_NODE_FLAGS = ['--max-semi-space-size=4'];

/** The switchyard bench target, run in its own process so its peak RSS is its own. */
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
  const child = await forkBenchChild(new URL('../switchyard-server.ts', import.meta.url), [upstreamUrl], SERVE_NODE_FLAGS);
  return { url: child.url, authHeader: String(child.announced['authHeader']), pid: child.pid, close: child.close };
}
