import type { IncomingHttpHeaders } from 'node:http';
import { MODEL_LISTS, type ModelListDecl, type OperationEntry } from '../generated/index.ts';
import type { RouteTarget } from '../handlers/compile-route-table.ts';

/** A model list's request carries its alternate style's header (the anthropic SDK's `anthropic-version`). */
export function alternateListStyle(list: ModelListDecl, headers: IncomingHttpHeaders): boolean {
  return list.alternate !== undefined && headers[list.alternate.when_header] !== undefined;
}

/** The error shape of a request to a route: its operation's, or its model list's as the request's headers choose it. */
export function errorStyleOf(target: RouteTarget, headers: IncomingHttpHeaders): OperationEntry['error_style'] {
  if (target.kind === 'operation') return target.operation.error_style;
  const { list } = target;
  return alternateListStyle(list, headers) && list.alternate ? list.alternate.style : list.style;
}

/** The headers that switch a model list to another protocol's shape (`anthropic-version`: messages). */
const ALTERNATE_STYLES = MODEL_LISTS.flatMap((list) => (list.alternate ? [list.alternate] : []));

/** A first path segment whose model lists all answer in one shape other than completions (`/v1beta`: generate). */
const STYLE_BY_FIRST_SEGMENT = new Map(
  [...new Set(MODEL_LISTS.map((list) => firstSegment(list.path)))].flatMap((segment) => {
    const styles = new Set(MODEL_LISTS.filter((list) => firstSegment(list.path) === segment).map((list) => list.style));
    const [style] = styles;
    return styles.size === 1 && style !== 'completions' ? [[segment, style] as const] : [];
  }),
);

function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path : path.slice(0, end);
}

/**
 * The error shape for a path no endpoint takes, told as the model lists tell their clients
 * apart (every SDK lists models): a list's alternate header, then the endpoint nearest to the
 * path, then the path's first segment.
 */
export function unmatchedErrorStyle(near: RouteTarget | undefined, headers: IncomingHttpHeaders, path: string): OperationEntry['error_style'] {
  const alternate = ALTERNATE_STYLES.find((a) => headers[a.when_header] !== undefined);
  if (alternate) return alternate.style;
  if (near) return errorStyleOf(near, headers);
  return STYLE_BY_FIRST_SEGMENT.get(firstSegment(path)) ?? 'completions';
}
