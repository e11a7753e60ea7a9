/**
 * The OpenAI account scope a key acts in (the openai SDK sends them whenever OPENAI_ORG_ID or
 * OPENAI_PROJECT_ID is set). A client's names its own account: forwarded, an upstream answers
 * 401 mismatched_organization and the gateway's credential is disabled for it. An upstream's
 * names the operator's account, which is not the client's business either.
 */
const ACCOUNT_SCOPE_HEADERS = ['openai-organization', 'openai-project'];

/**
 * Where clients put their AccessKey, and the account scope that goes with it. `api-key` is the
 * deployment-style SDKs' header; whatever a client sends there is its own, never something to
 * forward, and none of these goes back to the client.
 */
export const CLIENT_CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', ...ACCOUNT_SCOPE_HEADERS];
export const CLIENT_CREDENTIAL_QUERY_PARAMS: readonly string[] = ['key'];

/**
 * Path and query without credential query parameters. Other parameters keep their exact
 * encoding, so signatures or odd escapes upstream relies on survive.
 */
export function stripCredentialQuery(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  if (q === -1) return pathAndQuery;
  const kept = pathAndQuery
    .slice(q + 1)
    .split('&')
    .filter((part) => part.length > 0 && !CLIENT_CREDENTIAL_QUERY_PARAMS.includes(queryName(part)));
  const path = pathAndQuery.slice(0, q);
  return kept.length > 0 ? `${path}?${kept.join('&')}` : path;
}

function queryName(part: string): string {
  const eq = part.indexOf('=');
  const raw = eq === -1 ? part : part.slice(0, eq);
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}
