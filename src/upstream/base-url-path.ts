/**
 * A base URL's path as the gateway joins request paths to it. Operators paste the address
 * their vendor documents, which often ends in the API version (`https://host/v1`,
 * `https://host/api/paas/v4`, `https://host/v1beta`): that last segment then stands for the
 * version segment the operation's path starts with (`/v1/chat/completions`), instead of being
 * followed by a second one. Without one, the operation's whole path is appended.
 */
export interface BasePath {
  /** The path before the version segment, without a trailing slash ('' for none). */
  prefix: string;
  /** The base URL's own version segment (`v1`, `v4`, `v1beta`), if it ends with one. */
  version: string | undefined;
}

const VERSION_SEGMENT = /^v\d+[a-z0-9]*$/i;

/** Splits a base URL's pathname (`/api/paas/v4/`) into its prefix and version segment. */
export function basePath(pathname: string): BasePath {
  const path = pathname.replace(/\/+$/, '');
  const last = path.lastIndexOf('/');
  const segment = path.slice(last + 1);
  return VERSION_SEGMENT.test(segment) ? { prefix: path.slice(0, last), version: segment } : { prefix: path, version: undefined };
}

/** The upstream path for an operation's path (`/v1/...`) under a base path. */
export function joinBasePath(base: BasePath, operationPath: string): string {
  if (base.version === undefined) return `${base.prefix}${operationPath}`;
  const end = operationPath.indexOf('/', 1);
  const first = end < 0 ? operationPath.slice(1) : operationPath.slice(1, end);
  const rest = VERSION_SEGMENT.test(first) ? (end < 0 ? '' : operationPath.slice(end)) : operationPath;
  return `${base.prefix}/${base.version}${rest}`;
}

/** A whole base URL joined with an operation's path (for the calls that do not keep the split). */
export function joinBaseUrl(baseUrl: string, operationPath: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${joinBasePath(basePath(url.pathname), operationPath)}`;
}
