import type { ConnectionOptions } from 'node:tls';

export interface UpstreamClientOptions {
  /** TCP (and TLS) connect timeout. Default 10 s. */
  connectTimeoutMs?: number;
  /** Time to the response headers. Default 300 s: a long prompt can take minutes to start. */
  headersTimeoutMs?: number;
  /** Longest silence between response body chunks. Default 300 s. */
  bodyIdleTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open. Default 4 s (undici's own): under the
   * 5 s after which uvicorn's servers (and others) close an idle connection without saying so,
   * so the gateway lets a connection go before the upstream does. One that says so, as node's
   * `Keep-Alive: timeout=5`, is honoured by undici anyway: its hint may shorten this, never
   * lengthen it.
   */
  keepAliveTimeoutMs?: number;
  /**
   * Connections per origin (and per proxy); null for no cap, the default. A gateway's upstream
   * concurrency follows its clients': under a cap, requests past it would wait in the pool's
   * queue, where no timeout counts.
   */
  connections?: number | null;
  /** Extra TLS settings for upstream connections, e.g. a private CA. */
  tls?: ConnectionOptions;
}

export type ResolvedUpstreamOptions = Required<Omit<UpstreamClientOptions, 'tls'>> & Pick<UpstreamClientOptions, 'tls'>;

/** TCP (and TLS) connect timeout to an upstream; the WebSocket routes use it too. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export function resolveUpstreamOptions(options: UpstreamClientOptions): ResolvedUpstreamOptions {
  return {
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    headersTimeoutMs: options.headersTimeoutMs ?? 300_000,
    bodyIdleTimeoutMs: options.bodyIdleTimeoutMs ?? 300_000,
    keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? 4_000,
    connections: options.connections ?? null,
    tls: options.tls,
  };
}
