import type { IncomingHttpHeaders } from 'node:http';
import { MODEL_LISTS, type ModelListDecl, type ModelListStyle, type OperationEntry } from '../generated/index.ts';
import { firstSegment, matchResourceName, type CompiledRoute, type RouteMatch, type RouteTarget } from '../handlers/compile-route-table.ts';
import type { KeyLocation } from './present-access-key.ts';

/**
 * The shape a model list answers in: that of the first alternate the request carries (the
 * anthropic SDK's `anthropic-version`, the genai SDK's `x-goog-api-client`), else generate when
 * the presented key came from the `key` query parameter (only generate-style clients put it
 * there; presentedAccessKey reads it after the headers), else its own.
 */
export function listStyleOf(list: ModelListDecl, headers: IncomingHttpHeaders, keyFrom?: KeyLocation): ModelListStyle {
  return list.alternates?.find((a) => headers[a.when_header] !== undefined)?.style ?? (keyFrom === 'query' ? 'generate' : list.style);
}

/** The error shape of a request to a route: its operation's, or its model list's as the request chooses it. */
export function errorStyleOf(target: RouteTarget, headers: IncomingHttpHeaders, keyFrom?: KeyLocation): OperationEntry['error_style'] {
  return target.kind === 'operation' ? target.operation.error_style : listStyleOf(target.list, headers, keyFrom);
}

/** The alternates that switch a model list to another protocol's shape, in the manifest's order (`anthropic-version`: messages). */
const ALTERNATE_STYLES = MODEL_LISTS.flatMap((list) => list.alternates ?? []);

/** A first path segment whose model lists all answer in one shape other than completions (`/v1beta`: generate). */
const STYLE_BY_FIRST_SEGMENT = new Map(
  [...new Set(MODEL_LISTS.map((list) => firstSegment(list.path)))].flatMap((segment) => {
    const styles = new Set(MODEL_LISTS.filter((list) => firstSegment(list.path) === segment).map((list) => list.style));
    const [style] = styles;
    return styles.size === 1 && style !== 'completions' ? [[segment, style] as const] : [];
  }),
);

/**
 * The error shape for a path no endpoint takes, told as the model lists tell their clients
 * apart (every SDK lists models): a list's alternate, then a key from the query, then the
 * endpoint nearest to the path, then the path's first segment.
 */
function unmatchedErrorStyle(near: RouteTarget | undefined, headers: IncomingHttpHeaders, path: string, keyFrom?: KeyLocation): OperationEntry['error_style'] {
  const alternate = ALTERNATE_STYLES.find((a) => headers[a.when_header] !== undefined);
  if (alternate) return alternate.style;
  if (keyFrom === 'query') return 'generate';
  if (near) return errorStyleOf(near, headers, keyFrom);
  return STYLE_BY_FIRST_SEGMENT.get(firstSegment(path)) ?? 'completions';
}

/**
 * The error shape of a request refused before its route's own checks: its route's, or that of
 * the endpoint whose path it is under another method (a 405: the endpoint's protocol is known,
 * whatever other SDK's headers the request carries), else as for a path no endpoint takes.
 */
export function errorStyleOfMatch(match: RouteMatch, headers: IncomingHttpHeaders, path: string, keyFrom?: KeyLocation): OperationEntry['error_style'] {
  if (match.found) return errorStyleOf(match.target, headers, keyFrom);
  if (match.allowed.length > 0 && match.near) return errorStyleOf(match.near, headers, keyFrom);
  return unmatchedErrorStyle(match.near, headers, path, keyFrom);
}

/**
 * `match`, or, when no endpoint took the path and the model list nearest to it answers this
 * request in generate shape, that list's `{model}` as a resource name spanning segments: genai's
 * `models.get({ model: 'models/org/name' })` under v1 is `GET /v1/models/org/name`. To other
 * clients (whose SDKs encode the slash) the path stays no endpoint. HEAD is its GET, as for
 * every model list.
 */
export function withResourceName(routes: readonly CompiledRoute[], method: string, path: string, headers: IncomingHttpHeaders, match: RouteMatch, keyFrom?: KeyLocation): RouteMatch {
  if (match.found || match.allowed.length > 0 || match.near?.kind !== 'model_list' || listStyleOf(match.near.list, headers, keyFrom) !== 'generate') return match;
  return matchResourceName(routes, method === 'HEAD' ? 'GET' : method, path) ?? match;
}
