import { CHANNELS, type ChannelId } from '../generated/index.ts';

type ProxyScope = { proxy_url: string | null };

/**
 * The managed proxy an upstream call goes through: on channels that take one, the credential's,
 * else the Group's, else the global setting. Undefined means a direct connection.
 */
export function managedProxyUrl(channel: string, credential: ProxyScope, group: ProxyScope, settings: ProxyScope): string | undefined {
  if (!CHANNELS[channel as ChannelId]?.proxy) return undefined;
  return credential.proxy_url ?? group.proxy_url ?? settings.proxy_url ?? undefined;
}
