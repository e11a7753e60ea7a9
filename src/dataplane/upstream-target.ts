import type { OutgoingHeaders } from '../upstream/index.ts';

/**
 * Upstream URL: the group's base URL, the operation's upstream path with its parameters, and
 * the client's query string (`?...`, credentials already removed) exactly as it was encoded.
 */
export function upstreamUrl(baseUrl: string, upstreamPath: string, params: Record<string, string>, upstreamModel: string | null, search: string): string {
  const base = baseUrl.endsWith('/') ? baseUrl.replace(/\/+$/, '') : baseUrl;
  // Most paths have no parameters: nothing to substitute.
  if (!upstreamPath.includes('{')) return `${base}${upstreamPath}${search}`;
  const path = upstreamPath.replace(/\{(\w+)\*?\}/g, (_, name: string) => {
    if (name === 'model' && upstreamModel !== null) return encodeURIComponent(upstreamModel);
    const value = params[name] ?? '';
    return name === 'rest' ? value.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(value);
  });
  return `${base}${path}${search}`;
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
