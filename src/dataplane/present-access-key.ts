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
  // In order, without building a list of them per request (every data-plane request asks).
  return (
    presentedIn(auth && /^bearer /i.test(auth) ? auth.slice(7) : undefined, 'bearer') ??
    presentedIn(headers['x-api-key'], 'x-api-key') ??
    presentedIn(headers['x-goog-api-key'], 'x-goog-api-key') ??
    presentedIn(queryKey(query), 'query')
  );
}

/** The first `key` parameter that holds a value: only a blank first one has the rest looked through. */
function queryKey(query: URLSearchParams): string | undefined {
  const first = query.get('key');
  if (first === null) return undefined;
  return first.trim() ? first : query.getAll('key').find((value) => value.trim());
}

function presentedIn(value: string | string[] | undefined, from: KeyLocation): PresentedKey | undefined {
  const presented = typeof value === 'string' ? value.trim() : '';
  return presented ? { value: presented, from } : undefined;
}
