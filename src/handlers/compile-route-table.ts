import { MODEL_LISTS, OPERATIONS, OPERATION_IDS, type ModelListDecl, type OperationId } from '../generated/index.ts';
import { encodePathParameter } from '../upstream/encode-path-parameter.ts';

type OperationEntry = (typeof OPERATIONS)[OperationId];

export type RouteTarget = { kind: 'operation'; operation: OperationEntry } | { kind: 'model_list'; list: ModelListDecl };

export interface CompiledRoute {
  method: string;
  pattern: RegExp;
  params: string[];
  target: RouteTarget;
  /** Literal characters: the more, the more specific (compact wins over {response_id}). */
  specificity: number;
  /** Has a `{name*}` rest parameter: a fallback, tried only after every other route. */
  catchAll: boolean;
  /** Has a `{model}` that spans segments: it yields a path a more specific route takes by another method. */
  wide: boolean;
  /** The template's literal start, up to its first parameter. */
  prefix: string;
  /** The path template, to spell a catch-all match the way the upstream will receive it. */
  template: string;
  /**
   * A model list whose shape the headers choose, with a generate-style alternate: its pattern
   * with `{model}` as a resource name spanning segments, which matchResourceName tries.
   */
  resourcePattern?: RegExp;
}

export type RouteMatch =
  | { found: true; target: RouteTarget; params: Record<string, string> }
  | {
      found: false;
      /** The methods the path is taken with (an `Allow` header's), when it is not with this one; empty otherwise. */
      allowed: readonly string[];
      invalidParameter?: boolean;
      /**
       * The endpoint whose path it is under another method (the first such), else the one it is
       * closest to (longest literal prefix): the error answers in its protocol.
       */
      near?: RouteTarget;
      /** That endpoint's parameters, when the path is its (under another method) and they decode. */
      params?: Record<string, string>;
      /**
       * The first path segment under which the path, with this method, is an endpoint (`near`):
       * `POST /v1/models/m:generateContent` is served under `/v1beta`.
       */
      servedUnder?: string;
    };

// The generated table does not change while the process runs: the HTTP handler, the upgrade
// handler and the parser-failure answers share one compiled copy.
let compiled: readonly CompiledRoute[] | undefined;

/**
 * The matcher of every data-plane endpoint of the generated protocol table, compiled once. Path
 * templates use `{name}` for one segment (or the part before `:verb`) and `{name*}` for the
 * rest of the path. A `{name}` with no `:verb` after it takes colons: the openai and anthropic
 * SDKs send `models.retrieve('ft:gpt-4o-mini:org::abc')` unencoded. A generate-style `{model}`
 * is a resource name, which the genai SDK sends unencoded (`models/org/name:generateContent`):
 * it takes every non-empty segment up to the template's literal suffix, colons included (up to
 * the last `:verb`). A model list whose shape the headers choose (`GET /v1/models/{model}`:
 * openai's and anthropic's `models.retrieve`, and genai's `models.get` under v1) matches one
 * segment, and its `resourcePattern` the rest of the path, for the request that chooses the
 * generate style (matchResourceName).
 */
export function routeTable(): readonly CompiledRoute[] {
  compiled ??= Object.freeze(compileRouteTable());
  return compiled;
}

function compileRouteTable(): CompiledRoute[] {
  const routes: CompiledRoute[] = [
    ...OPERATION_IDS.map((id) => compile(OPERATIONS[id].method, OPERATIONS[id].path, { kind: 'operation', operation: OPERATIONS[id] } as const)),
    ...MODEL_LISTS.map((list) => {
      const target = { kind: 'model_list', list } as const;
      const route = compile(list.method, list.path, target);
      const resourceNames = list.style !== 'generate' && list.path.includes('{model}') && list.alternates?.some((a) => a.style === 'generate');
      return resourceNames ? { ...route, resourcePattern: compile(list.method, list.path, target, true).pattern } : route;
    }),
  ];
  // A rest-of-path route is a fallback: with equal literals it would otherwise shadow a
  // one-segment route (`/v1/responses/{rest*}` vs `/v1/responses/{response_id}`).
  return routes.sort((a, b) => Number(a.catchAll) - Number(b.catchAll) || b.specificity - a.specificity);
}

function compile(method: string, template: string, target: RouteTarget, resourceName = isGenerateStyle(target)): CompiledRoute {
  const params: string[] = [];
  let specificity = 0;
  let catchAll = false;
  let wide = false;
  const source = template.replace(/\{(\w+)(\*?)\}|[^{]+/g, (part: string, name: string | undefined, rest: string, offset: number) => {
    if (name === undefined) {
      specificity += part.length;
      return part.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
    params.push(name);
    if (rest) catchAll = true;
    if (rest) return '(.+)';
    if (name !== 'model' || !resourceName) return template[offset + part.length] === ':' ? '([^/:]+)' : '([^/]+)';
    wide = true;
    // No empty segment: a doubled or trailing slash is respelled, as for every other route. An
    // empty name before a `:verb` is the endpoint's (its model missing, a 400), not models.get's
    // resource `:verb` (a 405).
    return template[offset + part.length] === ':' ? '((?:[^/]+(?:/[^/]+)*)?)' : '([^/]+(?:/[^/]+)*)';
  });
  const open = template.indexOf('{');
  return { method, pattern: new RegExp(`^${source}$`), params, target, specificity, catchAll, wide, prefix: open < 0 ? template : template.slice(0, open), template };
}

function isGenerateStyle(target: RouteTarget): boolean {
  return target.kind === 'operation' ? target.operation.error_style === 'generate' : target.list.style === 'generate';
}

const literalRoutes = new WeakMap<readonly CompiledRoute[], Map<string, Map<string, RouteTarget>>>();

// Most endpoints have no parameters: answer those with one map lookup instead of the scan.
function literalIndex(routes: readonly CompiledRoute[]): Map<string, Map<string, RouteTarget>> {
  let index = literalRoutes.get(routes);
  if (!index) {
    index = new Map();
    for (const r of routes) {
      if (r.params.length > 0 || r.method === 'ANY') continue;
      let byPath = index.get(r.method);
      if (!byPath) index.set(r.method, (byPath = new Map()));
      byPath.set(r.pattern.source.slice(1, -1).replace(/\\/g, ''), r.target);
    }
    literalRoutes.set(routes, index);
  }
  return index;
}

/** The parameters of a literal route: none. Shared, so frozen. */
const NO_PARAMS: Record<string, string> = Object.freeze({});
const NO_METHODS: readonly string[] = Object.freeze([]);

/**
 * The route a request path names. A path that differs from a declared endpoint only by empty
 * segments (a trailing or doubled slash) is that endpoint, never the namespace passthrough:
 * `GET /v1/responses/resp_1/` is retrieval, so an N* subset cannot be stepped around by
 * spelling. Its parameters come from the canonical spelling, so the upstream gets that path.
 * A `:verb` whose colon is percent-encoded is that verb (withVerbColon).
 */
export function matchRoute(routes: readonly CompiledRoute[], method: string, spelled: string): RouteMatch {
  const path = withVerbColon(routes, spelled);
  const literal = literalIndex(routes).get(method)?.get(path);
  if (literal) return { found: true, target: literal, params: NO_PARAMS };
  let allowed: string[] | undefined;
  // The first route the path is under another method: a 405 names it (`GET /v1beta/models/m:embedContent` is embedContent's).
  let other: { route: CompiledRoute; m: RegExpExecArray; allowed: string[] } | undefined;
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    // `GET /v1beta/models/m:generateContent` stays a 405, not `models.get` of `m:generateContent`.
    if (route.wide && allowed) continue;
    if (route.method !== 'ANY' && route.method !== method) {
      // `POST /v1beta/models/m:batchGenerateContent` calls a method no route declares: an unknown endpoint, not a 405 of models.get.
      if (route.wide && endsInUndeclaredVerb(routes, path)) continue;
      if (!allowed) other = { route, m, allowed: (allowed = []) };
      if (!allowed.includes(route.method)) allowed.push(route.method);
      continue;
    }
    const params = paramsOf(route, m);
    if (params === undefined) return { found: false, allowed: NO_METHODS, invalidParameter: true, near: route.target };
    // Only passthrough requests pay for this: the upstream would get the rest re-split at its
    // decoded slashes (`resp_1/cancel/`, `resp_1%2Fcancel`), so judge the path it would get.
    if (route.catchAll) {
      const named = namedOperation(routes, method, path, forwardedSpelling(route, params));
      if (named?.found) return named;
      // A path a named route takes by another method is its 405, not the passthrough's:
      // `HEAD /v1/responses/resp_1` forwarded as is would step around an N* subset of retrieval.
      if (other) break;
      return named ?? { found: true, target: route.target, params };
    }
    return { found: true, target: route.target, params };
  }
  const canonical = withoutEmptySegments(path);
  if (canonical !== path) return matchRoute(routes, method, canonical);
  const elsewhere = servedElsewhere(routes, method, path);
  const nearest = other ? undefined : nearestRoute(routes, path);
  // The route that names more of the path wins: `POST /v1/models/m:generateContent` is
  // generateContent's under /v1beta, not a 405 of models.retrieve of `m:generateContent`; `GET
  // /v1beta/models/m:generateContent` stays generateContent's 405, not models.retrieve under /v1;
  // `GET /v1/models/a/b` stays near models.retrieve, not genai models.get under /v1beta.
  const here = other ? literalsPastFirstSegment(other.route.specificity, other.route.template) : nearest ? literalsPastFirstSegment(nearest.prefix.length, nearest.template) : 0;
  if (elsewhere && literalsPastFirstSegment(elsewhere.specificity, elsewhere.template) > here) {
    return { found: false, allowed: NO_METHODS, near: elsewhere.target, servedUnder: firstSegment(elsewhere.template) };
  }
  if (other) return { found: false, allowed: other.allowed, near: other.route.target, params: paramsOf(other.route, other.m) };
  return { found: false, allowed: NO_METHODS, near: nearest?.target };
}

const verbsOfTable = new WeakMap<readonly CompiledRoute[], ReadonlySet<string>>();

/** The `:verb`s the table's routes declare (Google's custom methods). */
function declaredVerbs(routes: readonly CompiledRoute[]): ReadonlySet<string> {
  let verbs = verbsOfTable.get(routes);
  if (verbs === undefined) verbsOfTable.set(routes, (verbs = new Set(routes.flatMap((r) => templateVerb(r.template) ?? []))));
  return verbs;
}

/** Whether the path ends in a `:verb` that no route declares. */
function endsInUndeclaredVerb(routes: readonly CompiledRoute[], path: string): boolean {
  const verb = /:([A-Za-z]\w*)\/*$/.exec(path)?.[1];
  return verb !== undefined && !declaredVerbs(routes).has(verb);
}

const verbSpellings = new WeakMap<readonly CompiledRoute[], RegExp | null>();

/**
 * `path` with a percent-encoded colon before a declared `:verb` at its end spelled as `:`
 * (`/v1beta/models/m%3AgenerateContent`, as clients that encode every colon send it): the verb
 * is the endpoint, as unencoded, not part of the model. Only the last colon, and only before a
 * verb a route declares, so `g4%3Alatest:generateContent` stays model `g4:latest`.
 */
function withVerbColon(routes: readonly CompiledRoute[], path: string): string {
  if (!path.includes('%3')) return path;
  let spelling = verbSpellings.get(routes);
  if (spelling === undefined) {
    const verbs = [...declaredVerbs(routes)];
    verbSpellings.set(routes, (spelling = verbs.length > 0 ? new RegExp(`%3[aA](${verbs.join('|')})(/*)$`) : null));
  }
  return spelling === null ? path : path.replace(spelling, ':$1$2');
}

/**
 * The model list whose `{model}` the path names as a resource name spanning segments
 * (`GET /v1/models/org/name`), for a request whose headers choose the generate style; undefined
 * when none takes it with this method. Its parameters decode as any route's.
 */
export function matchResourceName(routes: readonly CompiledRoute[], method: string, path: string): RouteMatch | undefined {
  const canonical = withoutEmptySegments(path);
  for (const route of routes) {
    const m = route.method === method ? route.resourcePattern?.exec(canonical) : undefined;
    if (!m) continue;
    const params = paramsOf(route, m);
    return params === undefined ? { found: false, allowed: NO_METHODS, invalidParameter: true, near: route.target } : { found: true, target: route.target, params };
  }
  return undefined;
}

/**
 * The route the path is with its first segment replaced by another route's (a client set to
 * the wrong API version), taking this method; rest-of-path fallbacks are left out.
 */
function servedElsewhere(routes: readonly CompiledRoute[], method: string, path: string): CompiledRoute | undefined {
  const own = firstSegment(path);
  const rest = path.slice(own.length);
  if (rest === '') return undefined;
  return routes.find((route) => {
    if (route.catchAll || (route.method !== 'ANY' && route.method !== method)) return false;
    const segment = firstSegment(route.template);
    return segment !== own && route.pattern.test(segment + rest);
  });
}

/** Literal characters of a template (or of its start) past its first segment, which the versions share. */
function literalsPastFirstSegment(literals: number, template: string): number {
  return literals - firstSegment(template).length;
}

/** `/v1beta` of `/v1beta/models`. */
export function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path : path.slice(0, end);
}

/** A route's decoded parameters, or undefined when one does not decode. */
function paramsOf(route: CompiledRoute, m: RegExpExecArray): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < route.params.length; i++) {
    const value = decodeParameter(m[i + 1]!);
    if (value === undefined) return undefined;
    params[route.params[i]!] = value;
  }
  return params;
}

/** The declared, non-passthrough route of `spelling` when it differs from `path`, or its 405 when it takes that path by another method. */
function namedOperation(routes: readonly CompiledRoute[], method: string, path: string, spelling: string): RouteMatch | undefined {
  if (spelling === path) return undefined;
  const named = matchRoute(namedRoutesOf(routes), method, spelling);
  return named.found || named.allowed.length > 0 ? named : undefined;
}

const namedRoutes = new WeakMap<readonly CompiledRoute[], readonly CompiledRoute[]>();

/** The routes without the catch-alls, kept per table so that its literal index is built once. */
function namedRoutesOf(routes: readonly CompiledRoute[]): readonly CompiledRoute[] {
  let named = namedRoutes.get(routes);
  if (!named) namedRoutes.set(routes, (named = routes.filter((r) => !r.catchAll)));
  return named;
}

/** A matched route's path spelled as it is forwarded (the rest re-split at its slashes), without empty segments. */
function forwardedSpelling(route: CompiledRoute, params: Record<string, string>): string {
  const path = route.template.replace(/\{(\w+)(\*?)\}/g, (_, name: string, rest: string) => {
    const value = params[name] ?? '';
    return encodePathParameter(value, rest !== '');
  });
  return withoutEmptySegments(path);
}

/** `//` as `/`, and no trailing `/` (except for the root itself). */
function withoutEmptySegments(path: string): string {
  const collapsed = path.includes('//') ? path.replace(/\/{2,}/g, '/') : path;
  return collapsed.length > 1 && collapsed.endsWith('/') ? collapsed.slice(0, -1) : collapsed;
}

function nearestRoute(routes: readonly CompiledRoute[], path: string): CompiledRoute | undefined {
  let best: CompiledRoute | undefined;
  for (const route of routes) if (path.startsWith(route.prefix) && route.prefix.length > (best?.prefix.length ?? 0)) best = route;
  return best;
}

/**
 * A parameter's decoded value, or undefined when it cannot be one: bad percent-encoding, or a
 * `.` or `..` segment, which the upstream URL would resolve and so reach another upstream path
 * with the gateway's credential (`/v1/responses/%2e%2e/%2e%2e/v1/files`).
 */
function decodeParameter(raw: string): string | undefined {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  return value.split('/').some((segment) => segment === '.' || segment === '..') ? undefined : value;
}

/** The `:verb` a path template ends with after a parameter (`/v1beta/models/{model}:generateContent`), if any. */
export function templateVerb(template: string): string | undefined {
  return /\}:(\w+)$/.exec(template)?.[1];
}
