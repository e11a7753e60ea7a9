/**
 * A base URL's path as the gateway joins request paths to it. Operators paste the address
 * their vendor documents, which often ends in the API version (`https://host/v1`,
 * `https://host/api/paas/v4`, `https://host/v1beta`): that last segment then stands for the
 * version segment the operation's path starts with (`/v1/chat/completions`), instead of being
 * followed by a second one, unless the path's is a staged version of its own (`/v1beta/...`).
 * Without one, the operation's whole path is appended. A Group with `versionless_api` (an
 * upstream whose API paths have no version, `https://api.perplexity.ai/chat/completions`) has
 * its base URL taken as an SDK takes its base_url, as the API's root: the operation's path is
 * appended without its version segment.
 */
export interface BasePath {
  /** The path before the version segment, without a trailing slash ('' for none); the whole path when versionless. */
  prefix: string;
  /** The base URL's own version segment (`v1`, `v4`, `v1beta`), if it ends with one and is not versionless. */
  version: string | undefined;
  /** The operation path's version segment is left out (a Group's `versionless_api`). */
  versionless: boolean;
}

/** `v1`, `v4`, `v1beta`, `v2alpha1`: not `v2ray` or `v3api`, which are prefixes like any other. */
const VERSION_SEGMENT = /^v\d+(?:(?:alpha|beta)\d*)?$/i;
/** A version with a stage (`v1beta`): an API of its own, which a base URL's plain version does not stand for. */
const STAGED_VERSION = /^v\d+(?:alpha|beta)\d*$/i;

/** Splits a base URL's pathname (`/api/paas/v4/`) into its prefix and version segment. */
export function basePath(pathname: string, versionless = false): BasePath {
  const path = pathname.replace(/\/+$/, '');
  if (versionless) return { prefix: path, version: undefined, versionless };
  const last = path.lastIndexOf('/');
  const segment = path.slice(last + 1);
  return VERSION_SEGMENT.test(segment) ? { prefix: path.slice(0, last), version: segment, versionless } : { prefix: path, version: undefined, versionless };
}

/** The upstream path for an operation's path (`/v1/...`) under a base path. */
export function joinBasePath(base: BasePath, operationPath: string): string {
  if (base.versionless) return `${base.prefix}${withoutVersionSegment(operationPath)}`;
  if (base.version === undefined) return `${base.prefix}${operationPath}`;
  const end = operationPath.indexOf('/', 1);
  const first = end < 0 ? operationPath.slice(1) : operationPath.slice(1, end);
  if (!VERSION_SEGMENT.test(first)) return `${base.prefix}/${base.version}${operationPath}`;
  // A generate-style `/v1beta/...` under a base URL ending `/v1` (one address for every protocol) keeps its own version.
  if (STAGED_VERSION.test(first) && base.version.toLowerCase() !== first.toLowerCase()) return `${base.prefix}${operationPath}`;
  return `${base.prefix}/${base.version}${end < 0 ? '' : operationPath.slice(end)}`;
}

/** `/v1/chat/completions` as `/chat/completions`, `/v1beta/models/...` as `/models/...`; a path without a version segment (`/openai/...`) whole. */
function withoutVersionSegment(operationPath: string): string {
  const end = operationPath.indexOf('/', 1);
  const first = end < 0 ? operationPath.slice(1) : operationPath.slice(1, end);
  if (!VERSION_SEGMENT.test(first)) return operationPath;
  return end < 0 ? '' : operationPath.slice(end);
}

/** A whole base URL joined with an operation's path (for the calls that do not keep the split). */
export function joinBaseUrl(baseUrl: string, operationPath: string, versionless = false): string {
  const url = new URL(baseUrl);
  return `${url.origin}${joinBasePath(basePath(url.pathname, versionless), operationPath)}`;
}
