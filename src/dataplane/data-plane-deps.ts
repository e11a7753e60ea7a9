import type { Clock } from '../store/clock.ts';
import type { ConfigStore } from '../store/config-store.ts';
import type { LogStore } from '../store/logs/index.ts';
import type { UpstreamClient } from '../upstream/index.ts';

export interface DataPlaneOptions {
  /** Largest request body accepted (bytes). */
  maxBodyBytes: number;
  /** JSON bodies up to this size are parsed whole; larger ones stream with only the model rewritten. */
  bufferedJsonBytes: number;
  /** An upstream stream silent this long is ended with the protocol's error event. */
  streamIdleTimeoutMs: number;
  /** Time allowed for an upstream to send its response headers. */
  headersTimeoutMs: number;
}

export const DEFAULT_DATA_PLANE_OPTIONS: DataPlaneOptions = {
  maxBodyBytes: 64 * 1024 * 1024,
  bufferedJsonBytes: 1024 * 1024,
  streamIdleTimeoutMs: 120_000,
  headersTimeoutMs: 300_000,
};

export interface DataPlaneDeps {
  store: ConfigStore;
  logs: LogStore;
  upstream: UpstreamClient;
  clock: Clock;
  options: DataPlaneOptions;
}
