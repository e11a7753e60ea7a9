import type { IncomingHttpHeaders } from 'node:http';

/**
 * The AccessKey a data-plane client presents, the way its SDK sends it (decisions.md §2):
 * the first of `Authorization: Bearer`, `x-api-key`, `x-goog-api-key` and the `key` query
 * parameter that holds a value. An empty or blank one counts as absent, so that it does not
 * hide a key given in a later location.
 */
export function presentedAccessKey(headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  const auth = headers.authorization;
  const bearer = auth && /^bearer /i.test(auth) ? auth.slice(7) : undefined;
  for (const value of [bearer, headers['x-api-key'], headers['x-goog-api-key'], query.get('key')]) {
    const presented = typeof value === 'string' ? value.trim() : '';
    if (presented) return presented;
  }
  return undefined;
}
