import type { IncomingHttpHeaders } from 'node:http';

/** Where a presented AccessKey was found: a key in the query is sent only by generate-style clients. */
export type KeyLocation = 'bearer' | 'x-api-key' | 'x-goog-api-key' | 'query';

export interface PresentedKey {
  value: string;
  from: KeyLocation;
}

/**
 * The AccessKey a data-plane client presents, the way its SDK sends it (decisions.md §2):
 * the first of `Authorization: Bearer`, `x-api-key`, `x-goog-api-key` and the `key` query
 * parameter that holds a value. An empty or blank one counts as absent, so that it does not
 * hide a key given in a later location.
 */
export function presentedAccessKey(headers: IncomingHttpHeaders, query: URLSearchParams): PresentedKey | undefined {
  const auth = headers.authorization;
  const bearer = auth && /^bearer /i.test(auth) ? auth.slice(7) : undefined;
  const locations: [KeyLocation, string | string[] | undefined][] = [
    ['bearer', bearer],
    ['x-api-key', headers['x-api-key']],
    ['x-goog-api-key', headers['x-goog-api-key']],
    ['query', query.get('key') ?? undefined],
  ];
  for (const [from, value] of locations) {
    const presented = typeof value === 'string' ? value.trim() : '';
    if (presented) return { value: presented, from };
  }
  return undefined;
}
