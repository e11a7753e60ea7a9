import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { HeaderMap, OutgoingHeaders } from './header-map.ts';
import { resolveUpstreamOptions, type ResolvedUpstreamOptions, type UpstreamClientOptions } from './upstream-options.ts';
import { createOriginPool, createProxyDispatcher } from './create-dispatcher.ts';
import { ExchangeHandler } from './exchange-handler.ts';
import { upstreamAbortError, type UpstreamReply } from './upstream-reply.ts';

/** An upstream URL already split: `origin` as URL.origin gives it, `path` with the query. */
export interface UpstreamTarget {
  origin: string;
  path: string;
}

export interface UpstreamRequest {
  /** Full upstream URL, query included, or the same already split (the data plane's hot path). */
  url: string | URL | UpstreamTarget;
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

const URL_CACHE_LIMIT = 1024;

/** An upstream call in flight: the reply at its response headers, and a way to call it off. */
export interface UpstreamExchange {
  /** Resolves at the response headers (any status); rejects on transport failures only. */
  reply: Promise<UpstreamReply>;
  /** Calls the request off, before or after the reply arrived. */
  abort(reason?: Error): void;
}

/** The proxy URLs and upstream origins a configuration can send requests to. */
export interface LiveUpstreams {
  origins: ReadonlySet<string>;
  proxies: ReadonlySet<string>;
}

/**
 * HTTP client for upstream calls on undici: a keep-alive Pool per origin, one dispatcher per
 * proxy URL, both created on first use and kept until close(), or until retain() is told the
 * configuration no longer names them (a direct pool also once a burst is over, see createOriginPool). Any status resolves; only transport failures reject
 * (see classifyUpstreamError).
 */
export class UpstreamClient {
  readonly #options: ResolvedUpstreamOptions;
  readonly #dispatchers = new Map<string, Dispatcher>();
  readonly #urls = new Map<string, UpstreamTarget>();
  /** Direct pools by origin, apart from proxies: the hot path looks them up by the origin string itself. */
  readonly #pools = new Map<string, Dispatcher>();
  /** Dispatchers retain() let go, until their last requests finish: close() and destroy() still reach them. */
  readonly #closing = new Map<Dispatcher, Promise<void>>();

  constructor(options: UpstreamClientOptions = {}) {
    this.#options = resolveUpstreamOptions(options);
  }

  /**
   * Starts a request whose body is delivered to a sink (UpstreamReply.consume): the data
   * plane's path. It takes no signal: the exchange's abort() calls it off.
   */
  exchange(request: Omit<UpstreamRequest, 'signal'>): UpstreamExchange {
    const { url: given } = request;
    const url = typeof given === 'string' ? this.#parse(given) : given instanceof URL ? { origin: given.origin, path: `${given.pathname}${given.search}` } : given;
    const dispatcher = this.dispatcherFor(url.origin, request.proxy);
    let handler!: ExchangeHandler;
    const reply = new Promise<UpstreamReply>((resolve, reject) => {
      handler = new ExchangeHandler(resolve, reject, request.body);
    });
    dispatcher.dispatch(
      {
        origin: url.origin,
        path: url.path,
        method: request.method as Dispatcher.HttpMethod,
        headers: request.headers,
        body: request.body ?? null,
        headersTimeout: request.headersTimeoutMs ?? this.#options.headersTimeoutMs,
        bodyTimeout: request.bodyIdleTimeoutMs ?? this.#options.bodyIdleTimeoutMs,
      },
      handler,
    );
    return { reply, abort: (reason = upstreamAbortError()) => handler.abort(reason) };
  }

  /** A request whose body comes back as a Readable; `signal` aborts it at any point. */
  async request(request: UpstreamRequest): Promise<UpstreamResponse> {
    const { signal } = request;
    const exchange = this.exchange(request);
    const onAbort = () => exchange.abort(signal?.reason instanceof Error ? signal.reason : upstreamAbortError());
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    let reply: UpstreamReply;
    try {
      reply = await exchange.reply;
    } catch (error) {
      signal?.removeEventListener('abort', onAbort);
      throw error;
    }
    const body = reply.toReadable();
    if (signal) body.once('close', () => signal.removeEventListener('abort', onAbort));
    return { status: reply.status, headers: reply.headers, body };
  }

  /** Origin and path of a URL; the same few URLs come back on every request, so they are kept. */
  #parse(href: string): UpstreamTarget {
    let parsed = this.#urls.get(href);
    if (parsed === undefined) {
      const url = new URL(href);
      parsed = { origin: url.origin, path: `${url.pathname}${url.search}` };
      if (this.#urls.size >= URL_CACHE_LIMIT) this.#urls.clear();
      this.#urls.set(href, parsed);
    }
    return parsed;
  }

  /** The cached dispatcher for an origin, or for a proxy (which serves every origin). */
  dispatcherFor(origin: string, proxy?: string): Dispatcher {
    const cache = proxy === undefined ? this.#pools : this.#dispatchers;
    const key = proxy ?? origin;
    let dispatcher = cache.get(key);
    if (dispatcher === undefined) {
      dispatcher = proxy === undefined ? this.#originPool(origin) : createProxyDispatcher(proxy, this.#options);
      cache.set(key, dispatcher);
    }
    return dispatcher;
  }

  /** A direct pool, let go once a burst has left it holding mostly Client objects without a connection. */
  #originPool(origin: string): Dispatcher {
    const pool: Dispatcher = createOriginPool(origin, this.#options, () => {
      if (this.#pools.get(origin) !== pool) return;
      this.#pools.delete(origin);
      this.#letGo(pool);
    });
    return pool;
  }

  /**
   * Closes and forgets the dispatchers of origins and proxies `live` does not name: kept, each
   * would hold its connections (and a proxy's its credentials) for the process's life. Their
   * requests in flight finish (undici's close()). A closed one is never handed out: it leaves
   * the cache before it closes, and exchange() takes a dispatcher and dispatches on it in one
   * synchronous step. A later request to the same origin or proxy gets a new one.
   */
  retain(live: LiveUpstreams): void {
    this.#release(this.#pools, live.origins);
    this.#release(this.#dispatchers, live.proxies);
  }

  /** For diagnostics (tests of churn): dispatchers kept, and those let go that still finish requests. */
  diagnosticSizes(): { pools: number; proxies: number; closing: number } {
    return { pools: this.#pools.size, proxies: this.#dispatchers.size, closing: this.#closing.size };
  }

  #release(cache: Map<string, Dispatcher>, live: ReadonlySet<string>): void {
    for (const [key, dispatcher] of cache) {
      if (live.has(key)) continue;
      cache.delete(key);
      this.#letGo(dispatcher);
    }
  }

  /** Closes a dispatcher already out of the cache; its requests in flight finish. */
  #letGo(dispatcher: Dispatcher): void {
    const closed = dispatcher.close().then(
      () => undefined,
      () => undefined,
    );
    this.#closing.set(dispatcher, closed.then(() => void this.#closing.delete(dispatcher)));
  }

  /** Closes every dispatcher after its requests finish. */
  async close(): Promise<void> {
    const all = this.#takeAll();
    await Promise.all([...all.map((d) => d.close()), ...this.#closing.values()]);
  }

  /** Closes every dispatcher now, failing requests in flight. */
  async destroy(): Promise<void> {
    const all = [...this.#takeAll(), ...this.#closing.keys()];
    await Promise.all(all.map((d) => d.destroy()));
  }

  #takeAll(): Dispatcher[] {
    const all = [...this.#pools.values(), ...this.#dispatchers.values()];
    this.#pools.clear();
    this.#dispatchers.clear();
    return all;
  }
}

