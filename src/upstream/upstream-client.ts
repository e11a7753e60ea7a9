import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { HeaderMap, OutgoingHeaders } from './header-map.ts';
import { resolveUpstreamOptions, type ResolvedUpstreamOptions, type UpstreamClientOptions } from './upstream-options.ts';
import { createOriginPool, createProxyDispatcher } from './create-dispatcher.ts';

export interface UpstreamRequest {
  /** Full upstream URL, query included. */
  url: string | URL;
  method: string;
  headers: OutgoingHeaders;
  /** Streamed as it is read; a Readable can be sent only once (keep a copy to fail over). */
  body?: Readable | Uint8Array | string | null;
  signal?: AbortSignal;
  /** Managed proxy URL (http, https, socks5, socks5h); direct when absent. */
  proxy?: string;
  headersTimeoutMs?: number;
  bodyIdleTimeoutMs?: number;
}

export interface UpstreamResponse {
  status: number;
  headers: HeaderMap;
  /** The response body as it arrives; consume or destroy it. */
  body: Readable;
}

/**
 * HTTP client for upstream calls on undici: a keep-alive Pool per origin, one dispatcher per
 * proxy URL, both created on first use and kept until close(). Any status resolves; only
 * transport failures reject (see classifyUpstreamError).
 */
export class UpstreamClient {
  readonly #options: ResolvedUpstreamOptions;
  readonly #dispatchers = new Map<string, Dispatcher>();

  constructor(options: UpstreamClientOptions = {}) {
    this.#options = resolveUpstreamOptions(options);
  }

  async request(request: UpstreamRequest): Promise<UpstreamResponse> {
    const url = typeof request.url === 'string' ? new URL(request.url) : request.url;
    const dispatcher = this.dispatcherFor(url.origin, request.proxy);
    const response = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: request.method as Dispatcher.HttpMethod,
      headers: request.headers,
      body: request.body ?? null,
      signal: request.signal ?? null,
      headersTimeout: request.headersTimeoutMs ?? this.#options.headersTimeoutMs,
      bodyTimeout: request.bodyIdleTimeoutMs ?? this.#options.bodyIdleTimeoutMs,
    });
    return { status: response.statusCode, headers: response.headers, body: response.body };
  }

  /** The cached dispatcher for an origin, or for a proxy (which serves every origin). */
  dispatcherFor(origin: string, proxy?: string): Dispatcher {
    const key = proxy === undefined ? `direct ${origin}` : `proxy ${proxy}`;
    let dispatcher = this.#dispatchers.get(key);
    if (dispatcher === undefined) {
      dispatcher = proxy === undefined ? createOriginPool(origin, this.#options) : createProxyDispatcher(proxy, this.#options);
      this.#dispatchers.set(key, dispatcher);
    }
    return dispatcher;
  }

  /** Closes every dispatcher after its requests finish. */
  async close(): Promise<void> {
    const all = [...this.#dispatchers.values()];
    this.#dispatchers.clear();
    await Promise.all(all.map((d) => d.close()));
  }

  /** Closes every dispatcher now, failing requests in flight. */
  async destroy(): Promise<void> {
    const all = [...this.#dispatchers.values()];
    this.#dispatchers.clear();
    await Promise.all(all.map((d) => d.destroy()));
  }
}
