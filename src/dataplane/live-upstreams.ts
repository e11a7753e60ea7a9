import type { LiveUpstreams } from '../upstream/index.ts';
import type { Snapshot } from './config-snapshot.ts';

/**
 * The proxy URLs and upstream origins a configuration can send requests to: every proxy URL
 * set on a credential, a Group or globally, and the origins of the Groups' base URLs and of
 * the credentials' own locations (`locations`: those of the credentials in use, as the pool
 * keeps them). The upstream client keeps dispatchers for these and closes the others.
 */
export function liveUpstreams(snap: Snapshot, locations: Iterable<string>): LiveUpstreams {
  const origins = new Set<string>();
  const proxies = new Set<string>();
  const addOrigin = (baseUrl: string | null) => {
    if (baseUrl === null) return;
    // As upstreamTarget parses it; a base URL it cannot parse never reaches the client.
    try {
      origins.add(new URL(baseUrl).origin);
    } catch {
      // Not a URL: no dispatcher was made for it.
    }
  };
  if (snap.settings.proxy_url !== null) proxies.add(snap.settings.proxy_url);
  for (const group of snap.groups) {
    addOrigin(group.base_url);
    if (group.proxy_url !== null) proxies.add(group.proxy_url);
  }
  for (const credentials of snap.credentialsByGroup.values()) for (const c of credentials) if (c.proxy_url !== null) proxies.add(c.proxy_url);
  for (const location of locations) addOrigin(location);
  return { origins, proxies };
}
