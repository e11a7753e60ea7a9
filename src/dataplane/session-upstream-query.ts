import { withoutQueryParams } from '../upstream/index.ts';

/**
 * The query a session's upstream upgrade carries (from its `?`, or '' for none), from the
 * client's `search` as it was sent: without the parameters `drop` holds back (as on the HTTP
 * path, each other parameter keeps its spelling), and, when the Group maps the model, the
 * first `model` parameter's value replaced by `upstreamModel` in its place and any later one
 * left out, so that the upstream reads the mapped model whichever it reads.
 */
export function sessionUpstreamQuery(search: string, drop: (name: string) => boolean, upstreamModel: string | null): string {
  const kept = withoutQueryParams(search, drop);
  if (upstreamModel === null || kept === '') return kept;
  const query = kept.slice(1);
  // Read as withoutQueryParams reads it: URLSearchParams drops one leading `?`, and its names pair with the non-empty segments.
  const lead = query.startsWith('?') ? '?' : '';
  const names = [...new URLSearchParams(query).keys()];
  let n = 0;
  let replaced = false;
  const parts = query
    .slice(lead.length)
    .split('&')
    .flatMap((part) => {
      if (part.length === 0) return [part];
      if (names[n++] !== 'model') return [part];
      if (replaced) return [];
      replaced = true;
      const eq = part.indexOf('=');
      return [`${eq === -1 ? part : part.slice(0, eq)}=${encodeURIComponent(upstreamModel)}`];
    });
  return `?${lead}${parts.join('&')}`;
}
