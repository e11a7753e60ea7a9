import type { Readable } from 'node:stream';
import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../../generated/index.ts';
import { DiscoveryFailed, DiscoveryRefused, type DiscoveredModels, type DiscoveryTimeouts, type ModelDiscovery } from '../../management/model-discovery.ts';
import { classifyUpstreamError, joinBaseUrl, type UpstreamClient, type UpstreamFailureKind } from '../../upstream/index.ts';
import { withinModelCap } from '../../dataplane/body/model-name-cap.ts';
import { withoutBom } from '../../streaming/index.ts';
import { credentialLocation } from '../../store/credential-location.ts';
import groupModelsSchema from '../../management/schemas/group-models.json' with { type: 'json' };
import {
  DISCOVERY_DIALECT_OF_WIRE,
  DISCOVERY_DIALECTS,
  MAX_DISCOVERED_ID_BYTES,
  MAX_DISCOVERED_MODELS,
  MAX_DISCOVERY_PAGE_BYTES,
  MAX_DISCOVERY_PAGE_DEPTH,
  MAX_DISCOVERY_PAGES,
  type DiscoveryDialect,
} from './discovery-dialects.ts';
import { nestedDeeperThan } from './json-nesting-depth.ts';

type Dialect = (typeof DISCOVERY_DIALECTS)[DiscoveryDialect];

/**
 * The dialect a channel lists models in: the one its native conversation routes speak, else
 * the one its converted routes' fixed wire has a list call in (DISCOVERY_DIALECT_OF_WIRE).
 */
export function discoveryDialectOf(channel: string): DiscoveryDialect {
  const cells = CHANNELS[channel as ChannelId]?.cells;
  if (!cells || cells.CC.mode === 'N' || cells.RC.mode === 'N') return 'completions';
  if (cells.MS.mode === 'N') return 'messages';
  if (cells.GG.mode === 'N' || cells.GG.mode === 'N/C') return 'generate';
  for (const cell of [cells.CC, cells.RC, cells.MS, cells.GG]) {
    const listed = cell.wire?.kind === 'fixed' ? DISCOVERY_DIALECT_OF_WIRE[cell.wire.dialect] : undefined;
    if (listed) return listed;
  }
  return 'completions';
}

/**
 * Model discovery for static-key channels: upstream list calls with the chosen credential (and
 * its managed proxy) to its own base URL or endpoint when its kind has one, else to the Group's
 * base URL (joined as the data plane joins it, a versionless_api Group's without the path's
 * version segment), page after page until the upstream says there are no more, MAX_DISCOVERY_PAGES
 * were read or the ids reach MAX_DISCOVERED_MODELS or MAX_DISCOVERED_ID_BYTES, answered with
 * the model ids in order. Each call has the settings' timeouts, and
 * all of them together `timeouts.totalMs`.
 */
export function upstreamModelDiscovery(client: UpstreamClient): ModelDiscovery {
  return {
    async list({ group, credential, values, proxy, timeouts }) {
      // Not upstream failures: what this provider cannot list with, and configuration the operator can fix.
      if (CREDENTIAL_KINDS[credential.kind as CredentialKindId]?.flow !== 'static') throw new DiscoveryRefused('credential_needs_flow');
      const baseUrl = credentialLocation(credential.kind, values) ?? group.base_url;
      if (!baseUrl) throw new DiscoveryRefused('upstream_base_url_missing');
      const dialect = DISCOVERY_DIALECTS[discoveryDialectOf(group.channel)];
      const secretField = CREDENTIAL_KINDS[credential.kind as CredentialKindId].fields.find((f) => f.secret && f.required)?.name;
      const secret = secretField ? values[secretField] : undefined;
      if (!secret) throw new DiscoveryRefused('credential_secret_missing');
      const request: ListRequest = {
        listUrl: joinBaseUrl(baseUrl, dialect.path, group.versionless_api),
        // identity: the page is parsed as sent, and an upstream left to choose may compress it (as on the data plane, forward-headers.ts).
        headers: { [dialect.keyHeader]: dialect.bearer ? `Bearer ${secret}` : secret, accept: 'application/json', 'accept-encoding': 'identity', ...dialect.extraHeaders },
        proxy,
        timeouts,
        deadline: AbortSignal.timeout(timeouts.totalMs),
      };
      try {
        const listed = await listPages(client, dialect, request);
        return dialect.stripPrefix === '' ? listed : { ...listed, collection: dialect.stripPrefix };
      } catch (err) {
        throw err instanceof DiscoveryFailed ? err : failedToList(err, request);
      }
    },
  };
}

interface ListRequest {
  listUrl: string;
  headers: Record<string, string>;
  proxy: string | null;
  timeouts: DiscoveryTimeouts;
  /** Aborts whatever call is in flight once the whole discovery's time is up. */
  deadline: AbortSignal;
}

/** The distinct ids listed so far, their UTF-8 bytes together, and whether an id was left out for the totals' caps. */
interface Listing {
  seen: Set<string>;
  bytes: number;
  full: boolean;
}

async function listPages(client: UpstreamClient, dialect: Dialect, request: ListRequest): Promise<DiscoveredModels> {
  const listing: Listing = { seen: new Set(), bytes: 0, full: false };
  let cursor: string | undefined;
  for (let page = 0; page < MAX_DISCOVERY_PAGES; page++) {
    const params = new URLSearchParams(dialect.query);
    if (cursor !== undefined && dialect.paging) params.set(dialect.paging.cursorParam, cursor);
    const query = params.toString() === '' ? '' : `?${params}`;
    const response = await client.request({
      url: `${request.listUrl}${query}`,
      method: 'GET',
      headers: request.headers,
      signal: request.deadline,
      headersTimeoutMs: request.timeouts.headersMs,
      bodyIdleTimeoutMs: request.timeouts.bodyIdleMs,
      ...(request.proxy ? { proxy: request.proxy } : {}),
    });
    if (response.status !== 200) {
      // Its body is not passed on (it may quote the key), so it is not read.
      response.body.destroy();
      throw new DiscoveryFailed(`upstream answered ${response.status}`, response.status);
    }
    const page = await readCapped(response.body);
    if (nestedDeeperThan(page, MAX_DISCOVERY_PAGE_DEPTH)) throw new DiscoveryFailed(`the upstream list is nested more than ${MAX_DISCOVERY_PAGE_DEPTH} levels deep`);
    // A byte order mark some compatible upstreams open with is no part of the JSON (RFC 8259 §8.1), as on the data plane.
    const next = readPage(dialect, withoutBom(page.toString('utf8')), listing);
    if (listing.full) return { models: [...listing.seen], truncated: true };
    if (!next.more) return { models: [...listing.seen], truncated: false };
    // "More" with no cursor to ask for it, or the cursor just followed (an upstream that ignores it): what was listed is all that can be had.
    if (next.cursor === undefined || next.cursor === cursor) return { models: [...listing.seen], truncated: true };
    cursor = next.cursor;
  }
  return { models: [...listing.seen], truncated: true };
}

/** A page's bytes, or DiscoveryFailed (the call aborted) once it passes MAX_DISCOVERY_PAGE_BYTES. */
async function readCapped(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_DISCOVERY_PAGE_BYTES) {
      body.destroy();
      throw new DiscoveryFailed(`the upstream list is larger than ${MAX_DISCOVERY_PAGE_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * What a list call that failed without an answer means, in the gateway's own words by the
 * failure's kind (never the error's message, which may carry the proxy URL with its
 * password); the timeouts name the setting that ran out.
 */
const FAILURE_DETAILS: Readonly<Record<UpstreamFailureKind, (timeouts: DiscoveryTimeouts) => string>> = {
  headers_timeout: (t) => `timed out: the upstream did not answer within ${seconds(t.headersMs)} (request_timeout_seconds)`,
  body_timeout: (t) => `timed out: the upstream's answer stalled for ${seconds(t.bodyIdleMs)} (stream_idle_timeout_seconds)`,
  connect_timeout: () => 'could not connect to the upstream: the connection was not established in time',
  connect_failed: () => 'could not connect to the upstream (connection refused, host not found, TLS handshake failed, or the proxy could not reach it)',
  connection_lost: () => 'the connection to the upstream was lost before its list was read',
  answer_unreadable: () => 'the upstream answered in a form that HTTP/1.1 does not allow or the gateway cannot read (a malformed or oversized head, or a transfer coding other than chunked)',
  credential_unusable: () => "the credential's secret holds a character an HTTP header cannot carry",
  proxy_misconfigured: () => 'the managed proxy URL cannot be used',
  proxy_unreachable: () => "the managed proxy could not be reached or refused the gateway's login",
  aborted: () => 'the list call was aborted',
  unknown: () => 'the list call to the upstream failed',
};

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/** The failure to report for a list call that failed without an answer. */
function failedToList(err: unknown, request: ListRequest): DiscoveryFailed {
  if (request.deadline.aborted) return new DiscoveryFailed(`timed out: the upstream's list took longer than ${seconds(request.timeouts.totalMs)} (request_timeout_seconds)`);
  const kind = classifyUpstreamError(err, { viaProxy: request.proxy !== null }).kind;
  return new DiscoveryFailed(FAILURE_DETAILS[kind](request.timeouts));
}

const UPSTREAM_NAME = groupModelsSchema.properties.models.items.properties.upstream;
/** The longest upstream name a Group's model mapping takes, in characters (code points, as the schema's validator counts). */
const MAX_UPSTREAM_CHARS = UPSTREAM_NAME.maxLength;
/** The characters a Group's model mapping refuses in an upstream name (control characters, DEL), read as Ajv reads the schema's pattern (`u`). */
const UPSTREAM_NAME_PATTERN = new RegExp(UPSTREAM_NAME.pattern, 'u');

function withinUpstreamCap(name: string): boolean {
  // UTF-16 units are never fewer than code points: only a long name needs counting.
  if (name.length <= MAX_UPSTREAM_CHARS) return true;
  let chars = 0;
  for (const _ of name) if (++chars > MAX_UPSTREAM_CHARS) return false;
  return true;
}

/** Whether a Group's model mapping takes `name` as its upstream name. */
function upstreamNameFits(name: string): boolean {
  return withinUpstreamCap(name) && UPSTREAM_NAME_PATTERN.test(name);
}

/** A proto3 answer with its empty list left out: an object holding nothing but the next page's token, if that. */
function isEmptyPage(dialect: Dialect, parsed: unknown): boolean {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
  return Object.keys(parsed).every((name) => name === dialect.paging?.cursor);
}

/**
 * Adds a page's ids to the listing (first occurrence kept) and says where the list goes on. An
 * answer without the dialect's list array is not a model list (an error body sent with 200,
 * say), unless it is a proto3 page with the empty list left out (isEmptyPage); entries whose id is not a non-empty string are skipped, and so are names a Group's model
 * mapping refuses, too long or with a control character (no Group could be configured with
 * them), or longer than the data plane takes
 * (a request could never name them). The first new id past the totals' caps marks the listing
 * full and ends the page.
 */
function readPage(dialect: Dialect, text: string, listing: Listing): { more: false } | { more: true; cursor: string | undefined } {
  let parsed: Record<string, unknown> | null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown> | null;
  } catch {
    throw new DiscoveryFailed('the upstream list is not JSON');
  }
  const bare = dialect.bareList && Array.isArray(parsed);
  const items: unknown = bare ? parsed : dialect.omitsEmptyList && isEmptyPage(dialect, parsed) ? [] : parsed?.[dialect.list];
  if (!parsed || !Array.isArray(items)) throw new DiscoveryFailed(`the upstream's answer has no ${dialect.list} array`);
  const ids = items.map((m) => (m as Record<string, unknown> | null)?.[dialect.id]).filter((id): id is string => typeof id === 'string' && id !== '');
  for (const id of ids) {
    const name = id.startsWith(dialect.stripPrefix) ? id.slice(dialect.stripPrefix.length) : id;
    if (name === '' || !upstreamNameFits(name) || !withinModelCap(name) || listing.seen.has(name)) continue;
    const bytes = Buffer.byteLength(name);
    if (listing.seen.size >= MAX_DISCOVERED_MODELS || listing.bytes + bytes > MAX_DISCOVERED_ID_BYTES) {
      listing.full = true;
      break;
    }
    listing.seen.add(name);
    listing.bytes += bytes;
  }
  if (!dialect.paging || bare) return { more: false };
  const { more, cursor, lastItemIsCursor } = dialect.paging;
  const given = parsed[cursor];
  const next = typeof given === 'string' && given !== '' ? given : lastItemIsCursor ? ids.at(-1) : undefined;
  const hasMore = more === null ? next !== undefined : parsed[more] === true;
  return hasMore ? { more: true, cursor: next } : { more: false };
}
