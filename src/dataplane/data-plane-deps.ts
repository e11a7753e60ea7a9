import type { Clock } from '../store/clock.ts';
import type { ConfigStore } from '../store/config-store.ts';
import type { LogStore } from '../store/logs/index.ts';
import type { UpstreamClient } from '../upstream/index.ts';
import type { InFlightRequests } from './in-flight-requests.ts';

export interface DataPlaneOptions {
  /** Largest request body accepted (bytes). */
  maxBodyBytes: number;
  /** JSON bodies up to this size are parsed whole in memory; larger ones are spooled to a temporary file. */
  bufferedJsonBytes: number;
  /** Where large JSON bodies are spooled while their request runs: `<data>/spool` when mounted by the server, else the system's temporary directory. */
  spoolDir?: string;
  /**
   * Overrides the `stream_idle_timeout_seconds` setting, which otherwise applies (live). Only
   * for tests and harnesses that need less than the setting's whole second.
   */
  streamIdleTimeoutMs?: number;
  /** Overrides the `request_timeout_seconds` setting (time until the upstream's response headers), as above. */
  headersTimeoutMs?: number;
  /**
   * A WebSocket session's client that sent nothing (no message, ping or pong) for this long is
   * pinged; one still silent a period later is gone (network lost without a FIN) and its session
   * is ended (`client_stalled`). Tests shorten it.
   */
  sessionHeartbeatMs: number;
  /**
   * Largest WebSocket message either side of a session may send (bytes): each message is
   * assembled whole before it is relayed, so this bounds what one holds in memory.
   */
  sessionMessageMaxBytes: number;
}

export const DEFAULT_DATA_PLANE_OPTIONS: DataPlaneOptions = {
  maxBodyBytes: 64 * 1024 * 1024,
  bufferedJsonBytes: 1024 * 1024,
  sessionHeartbeatMs: 30_000,
  // Above OpenAI realtime's largest event (an `input_audio_buffer.append` of up to 15 MiB of audio); ws's own default is 100 MiB.
  sessionMessageMaxBytes: 16 * 1024 * 1024,
};

export interface DataPlaneDeps {
  store: ConfigStore;
  logs: LogStore;
  upstream: UpstreamClient;
  clock: Clock;
  options: DataPlaneOptions;
  /**
   * The requests in flight, which a shutdown whose grace ran out ends in their protocol (a
   * stream's error event, a 503 answer) before the server cuts the connections still open
   * (`ended` from then on).
   */
  inFlight?: InFlightRequests;
}
