/**
 * The OpenAI account scope a key acts in (the openai SDK sends them whenever OPENAI_ORG_ID or
 * OPENAI_PROJECT_ID is set). A client's names its own account: forwarded, an upstream answers
 * 401 mismatched_organization and the gateway's credential is disabled for it. An upstream's
 * names the operator's account, which is not the client's business either.
 */
const ACCOUNT_SCOPE_HEADERS = ['openai-organization', 'openai-project'];
/**
 * The project Google bills a request's quota to (`X-Goog-User-Project`, the `$userProject` system
 * parameter). A client's names its own project, not the gateway key's: Google refuses it with an
 * API key (403 USER_PROJECT_DENIED, passed to the client), and a credential allowed to use that
 * project would move the operator's bill there.
 */
const GOOGLE_QUOTA_PROJECT_HEADER = 'x-goog-user-project';

/**
 * Where clients put their AccessKey, and the account scope that goes with it. `api-key` is the
 * deployment-style SDKs' header; whatever a client sends there is its own, never something to
 * forward, and none of these goes back to the client.
 */
export const CLIENT_CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', ...ACCOUNT_SCOPE_HEADERS, GOOGLE_QUOTA_PROJECT_HEADER];
/**
 * The WebSocket subprotocol prefixes (lowercase) OpenAI's browser clients put a key and its
 * account scope in (`openai-insecure-api-key.<key>`, `openai-organization.<org>`,
 * `openai-project.<project>`): the client's own, as the headers above, never offered upstream.
 */
const CLIENT_CREDENTIAL_SUBPROTOCOL_PREFIXES: readonly string[] = ['openai-insecure-api-key.', ...ACCOUNT_SCOPE_HEADERS.map((name) => `${name}.`)];

/** Whether an offered subprotocol carries a client's key or account scope (compared case-insensitively). */
export function isClientCredentialSubprotocol(protocol: string): boolean {
  const lower = protocol.toLowerCase();
  return CLIENT_CREDENTIAL_SUBPROTOCOL_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/**
 * `key` holds the AccessKey; `api-key` is where deployment-style realtime browser clients put
 * their key (not read as an AccessKey); `access_token` and `oauth_token` are Google's OAuth token
 * parameters, a client's own credential: forwarded, Google judges it instead of the gateway's key.
 * `userProject` is the client's quota project, as its header above.
 */
export const CLIENT_CREDENTIAL_QUERY_PARAMS: readonly string[] = ['key', 'api-key', 'access_token', 'oauth_token', 'userProject'];

/**
 * Whether a query parameter, by its decoded name, is a client credential. Google reads each
 * system parameter under a `$` alias too (`$key`, sent `%24key` as well): forwarded, a client's
 * `$key` is judged instead of the gateway's key, and an invalid one disables the credential.
 */
export function isClientCredentialQueryName(name: string): boolean {
  return CLIENT_CREDENTIAL_QUERY_PARAMS.includes(name.startsWith('$') ? name.slice(1) : name);
}

/**
 * Path and query without the parameters whose decoded name `drop` holds. Other parameters keep
 * their exact encoding, so signatures or odd escapes upstream relies on survive.
 */
export function withoutQueryParams(pathAndQuery: string, drop: (name: string) => boolean): string {
  return mapQuerySegments(pathAndQuery, (name, segment) => (drop(name) ? undefined : segment));
}

/**
 * Path and query with each `&` segment of the query kept, left out or rewritten as `visit`
 * returns it (the segment as sent, another, or undefined), by the segment's decoded name; empty
 * segments are left out. The path, and each segment kept as sent, keep their exact encoding.
 *
 * Names are read by URLSearchParams itself, as the data plane reads the key: it drops one
 * leading `?` of the query (`??key=` presents `key`) and skips empty `&` segments, so its
 * names pair in order with the non-empty segments. The dropped `?` stays with the first
 * segment when that is kept; a later segment's `?` must not take its place (`key=K&?x`
 * would become `??x`, read as `?x`), so an empty segment goes before it.
 */
export function mapQuerySegments(pathAndQuery: string, visit: (name: string, segment: string) => string | undefined): string {
  const q = pathAndQuery.indexOf('?');
  if (q === -1) return pathAndQuery;
  const query = pathAndQuery.slice(q + 1);
  const lead = query.startsWith('?') ? '?' : '';
  const names = [...new URLSearchParams(query).keys()];
  let n = 0;
  const kept = query
    .slice(lead.length)
    .split('&')
    .flatMap((part, i) => {
      if (part.length === 0) return [];
      const visited = visit(names[n++]!, part);
      return visited === undefined ? [] : [{ part: visited, first: i === 0 }];
    });
  const path = pathAndQuery.slice(0, q);
  if (kept.length === 0) return path;
  const opening = kept[0]!.first ? lead : kept[0]!.part.startsWith('?') ? '&' : '';
  return `${path}?${opening}${kept.map((k) => k.part).join('&')}`;
}
