import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../../generated/index.ts';
import type { ModelDiscovery } from '../../management/model-discovery.ts';
import type { UpstreamClient } from '../../upstream/index.ts';
import { DISCOVERY_DIALECTS, type DiscoveryDialect } from './discovery-dialects.ts';

/** The dialect a channel lists models in: the one its native conversation routes speak. */
export function discoveryDialectOf(channel: string): DiscoveryDialect {
  const cells = CHANNELS[channel as ChannelId]?.cells;
  if (!cells || cells.CC.mode === 'N' || cells.RC.mode === 'N') return 'completions';
  if (cells.MS.mode === 'N') return 'messages';
  if (cells.GG.mode === 'N' || cells.GG.mode === 'N/C') return 'generate';
  return 'completions';
}

/**
 * Model discovery for static-key channels: one upstream call through the Group's base URL
 * with the chosen credential (and its managed proxy), answered with the upstream model ids.
 */
export function upstreamModelDiscovery(client: UpstreamClient): ModelDiscovery {
  return {
    async list({ group, credential, values, proxy }) {
      if (CREDENTIAL_KINDS[credential.kind as CredentialKindId]?.flow !== 'static') throw new Error(`credential kind ${credential.kind} needs an authorization flow`);
      if (!group.base_url) throw new Error('the group has no base URL');
      const dialect = DISCOVERY_DIALECTS[discoveryDialectOf(group.channel)];
      const secretField = CREDENTIAL_KINDS[credential.kind as CredentialKindId].fields.find((f) => f.secret && f.required)?.name;
      const secret = secretField ? values[secretField] : undefined;
      if (!secret) throw new Error('the credential has no secret value');
      const response = await client.request({
        url: `${group.base_url.replace(/\/+$/, '')}${dialect.path}`,
        method: 'GET',
        headers: { [dialect.keyHeader]: dialect.bearer ? `Bearer ${secret}` : secret, accept: 'application/json', ...dialect.extraHeaders },
        ...(proxy ? { proxy } : {}),
      });
      const text = await response.body.setEncoding('utf8').toArray();
      if (response.status !== 200) throw new Error(`upstream answered ${response.status}`);
      const parsed = JSON.parse(text.join('')) as Record<string, unknown>;
      const items = Array.isArray(parsed[dialect.list]) ? (parsed[dialect.list] as Record<string, unknown>[]) : [];
      return items.map((m) => String(m[dialect.id] ?? '')).filter(Boolean).map((id) => (id.startsWith(dialect.stripPrefix) ? id.slice(dialect.stripPrefix.length) : id));
    },
  };
}
