import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../../generated/index.ts';
import { DiscoveryFailed, type DiscoveredModels, type DiscoveryTimeouts, type ModelDiscovery } from '../../management/model-discovery.ts';
import { classifyUpstreamError, joinBaseUrl, type UpstreamClient } from '../../upstream/index.ts';
import { credentialLocation } from '../../dataplane/credential-location.ts';
import { DISCOVERY_DIALECT_OF_WIRE, DISCOVERY_DIALECTS, MAX_DISCOVERY_PAGES, type DiscoveryDialect } from './discovery-dialects.ts';

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
 * base URL, page after page until the upstream says there are no more or MAX_DISCOVERY_PAGES
 * were read, answered with the model ids in order. Each call has the settings' timeouts, and
 * all of them together `timeouts.totalMs`.
 */
export function upstreamModelDiscovery(client: UpstreamClient): ModelDiscovery {
  return {
    async list({ group, credential, values, proxy, timeouts }) {
      if (CREDENTIAL_KINDS[credential.kind as CredentialKindId]?.flow !== 'static') throw new Error(`credential kind ${credential.kind} needs an authorization flow`);
      const baseUrl = credentialLocation(credential.kind, values) ?? group.base_url;
      if (!baseUrl) throw new Error('neither the credential nor the group has a base URL');
      const dialect = DISCOVERY_DIALECTS[discoveryDialectOf(group.channel)];
      const secretField = CREDENTIAL_KINDS[credential.kind as CredentialKindId].fields.find((f) => f.secret && f.required)?.name;
      const secret = secretField ? values[secretField] : undefined;
      if (!secret) throw new Error('the credential has no secret value');
      const request: ListRequest = {
        listUrl: joinBaseUrl(baseUrl, dialect.path),
        headers: { [dialect.keyHeader]: dialect.bearer ? `Bearer ${secret}` : secret, accept: 'application/json', ...dialect.extraHeaders },
        proxy,
        timeouts,
        deadline: AbortSignal.timeout(timeouts.totalMs),
      };
      try {
        return await listPages(client, dialect, request);
      } catch (err) {
        throw timedOut(err, request) ?? err;
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

async function listPages(client: UpstreamClient, dialect: Dialect, request: ListRequest): Promise<DiscoveredModels> {
  const seen = new Set<string>();
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
    const text = (await response.body.setEncoding('utf8').toArray()).join('');
    if (response.status !== 200) throw new DiscoveryFailed(`upstream answered ${response.status}`, response.status);
    const next = readPage(dialect, text, seen);
    if (!next.more) return { models: [...seen], truncated: false };
    // "More" with no cursor to ask for it, or the cursor just followed (an upstream that ignores it): what was listed is all that can be had.
    if (next.cursor === undefined || next.cursor === cursor) return { models: [...seen], truncated: true };
    cursor = next.cursor;
  }
  return { models: [...seen], truncated: true };
}

/** The failure to report when `err` is one of discovery's timeouts running out, naming the setting. */
function timedOut(err: unknown, request: ListRequest): DiscoveryFailed | undefined {
  const seconds = (ms: number) => `${ms / 1000} s`;
  if (request.deadline.aborted) return new DiscoveryFailed(`timed out: the upstream's list took longer than ${seconds(request.timeouts.totalMs)} (request_timeout_seconds)`);
  const kind = classifyUpstreamError(err).kind;
  if (kind === 'headers_timeout') return new DiscoveryFailed(`timed out: the upstream did not answer within ${seconds(request.timeouts.headersMs)} (request_timeout_seconds)`);
  if (kind === 'body_timeout') return new DiscoveryFailed(`timed out: the upstream's answer stalled for ${seconds(request.timeouts.bodyIdleMs)} (stream_idle_timeout_seconds)`);
  return undefined;
}

/**
 * Adds a page's ids to `seen` (first occurrence kept) and says where the list goes on. An
 * answer without the dialect's list array is not a model list (an error body sent with 200,
 * say); entries whose id is not a non-empty string are skipped.
 */
function readPage(dialect: Dialect, text: string, seen: Set<string>): { more: false } | { more: true; cursor: string | undefined } {
  let parsed: Record<string, unknown> | null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown> | null;
  } catch {
    throw new DiscoveryFailed('the upstream list is not JSON');
  }
  const items: unknown = parsed?.[dialect.list];
  if (!parsed || !Array.isArray(items)) throw new DiscoveryFailed(`the upstream's answer has no ${dialect.list} array`);
  const ids = items.map((m) => (m as Record<string, unknown> | null)?.[dialect.id]).filter((id): id is string => typeof id === 'string' && id !== '');
  for (const id of ids) {
    const name = id.startsWith(dialect.stripPrefix) ? id.slice(dialect.stripPrefix.length) : id;
    if (name !== '') seen.add(name);
  }
  if (!dialect.paging) return { more: false };
  const { more, cursor, lastItemIsCursor } = dialect.paging;
  const given = parsed[cursor];
  const next = typeof given === 'string' && given !== '' ? given : lastItemIsCursor ? ids.at(-1) : undefined;
  const hasMore = more === null ? next !== undefined : parsed[more] === true;
  return hasMore ? { more: true, cursor: next } : { more: false };
}
