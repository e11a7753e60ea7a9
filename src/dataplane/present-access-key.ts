import type { IncomingHttpHeaders } from 'node:http';

/**
 * The AccessKey a data-plane client presents, the way its SDK sends it (decisions.md §2):
 * `Authorization: Bearer`, `x-api-key`, `x-goog-api-key`, or the `key` query parameter.
 */
export function presentedAccessKey(headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  const auth = headers.authorization;
  if (auth && /^bearer /i.test(auth)) return auth.slice(7).trim() || undefined;
  const apiKey = headers['x-api-key'] ?? headers['x-goog-api-key'];
  if (typeof apiKey === 'string' && apiKey) return apiKey;
  return query.get('key') ?? undefined;
}
