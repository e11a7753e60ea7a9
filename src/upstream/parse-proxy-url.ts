import { redactUrl } from './redact-url.ts';

/** A managed proxy's URL, or a TypeError that names it without its credentials. */
export function parseProxyUrl(proxy: string): URL {
  try {
    return new URL(proxy);
  } catch {
    throw new TypeError(`invalid proxy URL ${redactUrl(proxy)}`);
  }
}
