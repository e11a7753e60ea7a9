import { CHANNELS, type ChannelId, type CredentialHeader } from '../generated/index.ts';
import { basePath, encodePathParameter, joinBasePath, type BasePath, type OutgoingHeaders, type UpstreamTarget } from '../upstream/index.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { googleModelResource } from './google-model-resource.ts';

const BASE_CACHE_LIMIT = 1024;
/** Base URLs split into origin and path (basePath), by the base URL string a Group holds (after `versionless ` for a versionless_api Group). */
const bases = new Map<string, { origin: string; path: BasePath }>();

/**
 * Upstream URL: the group's base URL, the operation's upstream path with its parameters (a
 * version segment the base URL ends with standing for the path's own, base-url-path.ts), and
 * the client's query string (`?...`, credentials already removed) exactly as it was encoded.
 * `versionless`: the Group's versionless_api, the path's version segment left out.
 */
export function upstreamUrl(baseUrl: string, upstreamPath: string, params: Record<string, string>, upstreamModel: string | null, search: string, versionless = false): string {
  const target = upstreamTarget(baseUrl, upstreamPath, params, upstreamModel, search, versionless);
  return `${target.origin}${target.path}`;
}

/** The same URL as upstreamUrl, split for the upstream client without parsing it per request. */
export function upstreamTarget(baseUrl: string, upstreamPath: string, params: Record<string, string>, upstreamModel: string | null, search: string, versionless = false): UpstreamTarget {
  // A base URL starts `http`: the two keys of one URL never meet.
  const key = versionless ? `versionless ${baseUrl}` : baseUrl;
  let base = bases.get(key);
  if (base === undefined) {
    const url = new URL(baseUrl);
    base = { origin: url.origin, path: basePath(url.pathname, versionless) };
    if (bases.size >= BASE_CACHE_LIMIT) bases.clear();
    bases.set(key, base);
  }
  return { origin: base.origin, path: `${joinBasePath(base.path, pathWithParameters(upstreamPath, params, upstreamModel))}${search}` };
}

/** Google's path of a model (`/v1beta/models/{model}:verb`), whose collection a resource-named upstream model gives. */
const GOOGLE_MODEL_PATH = '/models/{model}';

function pathWithParameters(upstreamPath: string, params: Record<string, string>, upstreamModel: string | null): string {
  // Most paths have no parameters: nothing to substitute.
  if (!upstreamPath.includes('{')) return upstreamPath;
  // `models/gemini-2.0-flash` upstream is `/models/gemini-2.0-flash`, and `tunedModels/t` is
  // `/tunedModels/t`: never `/models/models%2F…`, a model Google does not have.
  const resource = upstreamModel !== null && upstreamPath.includes(GOOGLE_MODEL_PATH) ? googleModelResource(upstreamModel) : undefined;
  if (resource !== undefined) upstreamPath = upstreamPath.replace(GOOGLE_MODEL_PATH, `/${resource.collection}${encodeUpstreamModel(resource.id)}`);
  return upstreamPath.replace(/\{(\w+)\*?\}/g, (_, name: string) => {
    if (name === 'model' && upstreamModel !== null) return encodeUpstreamModel(upstreamModel);
    const value = params[name] ?? '';
    return encodePathParameter(value, name === 'rest');
  });
}

/**
 * The Group's upstream model percent-encoded for a URL (path or query). A name holding a lone
 * surrogate (stored before the management API refused one) has no UTF-8 spelling: the Group's
 * mapping cannot be sent, which is no fault of the credential (model_mapping_unusable).
 */
export function encodeUpstreamModel(upstreamModel: string): string {
  if (!upstreamModel.isWellFormed()) throw new DataPlaneError('model_mapping_unusable', 'A URL cannot carry a model name with a lone surrogate.');
  return encodeURIComponent(upstreamModel);
}

/**
 * Each protocol's own convention for the upstream credential: messages style in `x-api-key`,
 * generate style and x-live in `x-goog-api-key`, every other protocol as a bearer token. A
 * channel whose upstream reads it elsewhere says so in its manifest (`credential_headers`).
 */
const PROTOCOL_CREDENTIAL_HEADERS: Readonly<Record<string, readonly CredentialHeader[]>> = {
  'x-messages': ['x-api-key'],
  'x-generate': ['x-goog-api-key'],
  'x-embeddings': ['x-goog-api-key'],
  'x-live': ['x-goog-api-key'],
};
const BEARER: readonly CredentialHeader[] = ['bearer'];

/** The headers the channel's upstream reads the credential from for the protocol. */
function credentialHeadersFor(channel: string, protocol: string): readonly CredentialHeader[] {
  return CHANNELS[channel as ChannelId]?.credential_headers?.[protocol] ?? PROTOCOL_CREDENTIAL_HEADERS[protocol] ?? BEARER;
}

/** Puts the upstream credential in every header the channel's upstream reads it from for the protocol. */
export function setUpstreamCredential(headers: OutgoingHeaders, channel: string, protocol: string, secret: string): void {
  for (const header of credentialHeadersFor(channel, protocol)) {
    if (header === 'bearer') headers.authorization = `Bearer ${secret}`;
    else headers[header] = secret;
  }
}
