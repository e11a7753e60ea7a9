import { mapQuerySegments } from '../upstream/index.ts';
import { encodeUpstreamModel } from './upstream-target.ts';

/**
 * The query a session's upstream upgrade carries (from its `?`, or '' for none), from the
 * client's `search` as it was sent: without the parameters `drop` holds back (as on the HTTP
 * path, each other parameter keeps its spelling), and, when the Group maps the model, the
 * first `model` parameter's value replaced by `upstreamModel` in its place and any later one
 * left out, so that the upstream reads the mapped model whichever it reads.
 */
export function sessionUpstreamQuery(search: string, drop: (name: string) => boolean, upstreamModel: string | null): string {
  let replaced = false;
  return mapQuerySegments(search, (name, segment) => {
    if (drop(name)) return undefined;
    if (upstreamModel === null || name !== 'model') return segment;
    if (replaced) return undefined;
    replaced = true;
    const eq = segment.indexOf('=');
    return `${eq === -1 ? segment : segment.slice(0, eq)}=${encodeUpstreamModel(upstreamModel)}`;
  });
}
