import { basePath, encodePathParameter, joinBasePath, type BasePath, type OutgoingHeaders, type UpstreamTarget } from '../upstream/index.ts';

const BASE_CACHE_LIMIT = 1024;
/** Base URLs split into origin and path (basePath), by the base URL string a Group holds. */
const bases = new Map<string, { origin: string; path: BasePath }>();

/**
 * Upstream URL: the group's base URL, the operation's upstream path with its parameters (a
 * version segment the base URL ends with standing for the path's own, base-url-path.ts), and
 * the client's query string (`?...`, credentials already removed) exactly as it was encoded.
 */
export function upstreamUrl(baseUrl: string, upstreamPath: string, params: Record<string, string>, upstreamModel: string | null, search: string): string {
  const target = upstreamTarget(baseUrl, upstreamPath, params, upstreamModel, search);
  return `${target.origin}${target.path}`;
}

/** The same URL as upstreamUrl, split for the upstream client without parsing it per request. */
export function upstreamTarget(baseUrl: string, upstreamPath: string, params: Record<string, string>, upstreamModel: string | null, search: string): UpstreamTarget {
  let base = bases.get(baseUrl);
  if (base === undefined) {
    const url = new URL(baseUrl);
    base = { origin: url.origin, path: basePath(url.pathname) };
    if (bases.size >= BASE_CACHE_LIMIT) bases.clear();
    bases.set(baseUrl, base);
  }
  return { origin: base.origin, path: `${joinBasePath(base.path, pathWithParameters(upstreamPath, params, upstreamModel))}${search}` };
}

function pathWithParameters(upstreamPath: string, params: Record<string, string>, upstreamModel: string | null): string {
  // Most paths have no parameters: nothing to substitute.
  if (!upstreamPath.includes('{')) return upstreamPath;
  return upstreamPath.replace(/\{(\w+)\*?\}/g, (_, name: string) => {
    if (name === 'model' && upstreamModel !== null) return encodeURIComponent(upstreamModel);
    const value = params[name] ?? '';
    return encodePathParameter(value, name === 'rest');
  });
}

/**
 * How the upstream expects the credential, by the protocol's own convention: messages style
 * in `x-api-key`, generate style in `x-goog-api-key`, everything else as a bearer token.
 */
export function setUpstreamCredential(headers: OutgoingHeaders, protocol: string, secret: string): void {
  if (protocol === 'x-messages') headers['x-api-key'] = secret;
  else if (protocol === 'x-generate' || protocol === 'x-embeddings' || protocol === 'x-live') headers['x-goog-api-key'] = secret;
  else headers.authorization = `Bearer ${secret}`;
}
