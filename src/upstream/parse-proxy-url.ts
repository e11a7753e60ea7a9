import { redactUrl } from './redact-url.ts';

/** How a managed proxy is spoken to: an HTTP CONNECT tunnel or SOCKS5. */
export type ProxyKind = 'connect' | 'socks';

/** The proxy schemes the gateway speaks, by URL protocol. */
const PROXY_KIND_BY_SCHEME: Readonly<Record<string, ProxyKind>> = {
  'http:': 'connect',
  'https:': 'connect',
  'socks5:': 'socks',
  'socks5h:': 'socks',
  'socks:': 'socks',
};

/** A managed proxy's URL and kind, or a TypeError that names it without its credentials. */
export function parseProxyUrl(proxy: string): { url: URL; kind: ProxyKind } {
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    throw new TypeError(`invalid proxy URL ${redactUrl(proxy)}`);
  }
  const kind = PROXY_KIND_BY_SCHEME[url.protocol];
  if (kind === undefined) throw new TypeError(`unsupported proxy scheme ${url.protocol} (use http, https, socks5 or socks5h)`);
  return { url, kind };
}
