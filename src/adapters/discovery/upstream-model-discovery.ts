import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../../generated/index.ts';
import { DiscoveryFailed, type ModelDiscovery } from '../../management/model-discovery.ts';
import type { UpstreamClient } from '../../upstream/index.ts';
import { credentialLocation } from '../../dataplane/credential-location.ts';
import { DISCOVERY_DIALECTS, MAX_DISCOVERY_PAGES, type DiscoveryDialect } from './discovery-dialects.ts';

type Dialect = (typeof DISCOVERY_DIALECTS)[DiscoveryDialect];

/** The dialect a channel lists models in: the one its native conversation routes speak. */
export function discoveryDialectOf(channel: string): DiscoveryDialect {
  const cells = CHANNELS[channel as ChannelId]?.cells;
  if (!cells || cells.CC.mode === 'N' || cells.RC.mode === 'N') return 'completions';
  if (cells.MS.mode === 'N') return 'messages';
  if (cells.GG.mode === 'N' || cells.GG.mode === 'N/C') return 'generate';
  return 'completions';
}

/**
 * Model discovery for static-key channels: upstream list calls with the chosen credential (and
 * its managed proxy) to its own base URL or endpoint when its kind has one, else to the Group's
 * base URL, page after page until the upstream says there are no more or MAX_DISCOVERY_PAGES
 * were read, answered with the model ids in order.
 */
export function upstreamModelDiscovery(client: UpstreamClient): ModelDiscovery {
  return {
    async list({ group, credential, values, proxy }) {
      if (CREDENTIAL_KINDS[credential.kind as CredentialKindId]?.flow !== 'static') throw new Error(`credential kind ${credential.kind} needs an authorization flow`);
      const baseUrl = credentialLocation(credential.kind, values) ?? group.base_url;
      if (!baseUrl) throw new Error('neither the credential nor the group has a base URL');
      const dialect = DISCOVERY_DIALECTS[discoveryDialectOf(group.channel)];
      const secretField = CREDENTIAL_KINDS[credential.kind as CredentialKindId].fields.find((f) => f.secret && f.required)?.name;
      const secret = secretField ? values[secretField] : undefined;
      if (!secret) throw new Error('the credential has no secret value');
      const listUrl = `${baseUrl.replace(/\/+$/, '')}${dialect.path}`;
      const headers = { [dialect.keyHeader]: dialect.bearer ? `Bearer ${secret}` : secret, accept: 'application/json', ...dialect.extraHeaders };
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < MAX_DISCOVERY_PAGES; page++) {
        const query = cursor === undefined ? '' : `?${new URLSearchParams({ [dialect.paging.cursorParam]: cursor })}`;
        const response = await client.request({ url: `${listUrl}${query}`, method: 'GET', headers, ...(proxy ? { proxy } : {}) });
        const text = (await response.body.setEncoding('utf8').toArray()).join('');
        if (response.status !== 200) throw new DiscoveryFailed(`upstream answered ${response.status}`, response.status);
        const next = readPage(dialect, text, seen);
        if (!next.more) return { models: [...seen], truncated: false };
        // "More" with no cursor to ask for it, or the cursor just followed (an upstream that ignores it): what was listed is all that can be had.
        if (next.cursor === undefined || next.cursor === cursor) return { models: [...seen], truncated: true };
        cursor = next.cursor;
      }
      return { models: [...seen], truncated: true };
    },
  };
}

/** Adds a page's ids to `seen` (first occurrence kept) and says where the list goes on. */
function readPage(dialect: Dialect, text: string, seen: Set<string>): { more: false } | { more: true; cursor: string | undefined } {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new DiscoveryFailed('the upstream list is not JSON');
  }
  const items = Array.isArray(parsed[dialect.list]) ? (parsed[dialect.list] as Record<string, unknown>[]) : [];
  const ids = items.map((m) => String(m?.[dialect.id] ?? '')).filter(Boolean);
  for (const id of ids) seen.add(id.startsWith(dialect.stripPrefix) ? id.slice(dialect.stripPrefix.length) : id);
  const { more, cursor, lastItemIsCursor } = dialect.paging;
  const given = parsed[cursor];
  const next = typeof given === 'string' && given !== '' ? given : lastItemIsCursor ? ids.at(-1) : undefined;
  const hasMore = more === null ? next !== undefined : parsed[more] === true;
  return hasMore ? { more: true, cursor: next } : { more: false };
}
