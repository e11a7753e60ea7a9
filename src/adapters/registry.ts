import type { ChannelAdapter } from './channel-adapter.ts';
import { completionsCompatibleAdapters } from './completions-compatible/adapters.ts';
import { converseAdapters } from './converse/adapters.ts';
import { deploymentAdapters } from './deployment/adapters.ts';
import { generateNativeAdapters } from './generate-native/adapters.ts';
import { messagesNativeAdapters } from './messages-native/adapters.ts';
import { nonConversationAdapters } from './non-conversation/adapters.ts';
import { relayAdapters } from './relay/adapters.ts';
import { serviceAccountAdapters } from './service-account/adapters.ts';
import { subscriptionAdapters } from './subscription/adapters.ts';

/** Every channel adapter, by channel id. A channel declared twice is a programming error. */
export const ADAPTERS: ReadonlyMap<string, ChannelAdapter> = buildRegistry([
  ...nonConversationAdapters,
  ...completionsCompatibleAdapters,
  ...subscriptionAdapters,
  ...messagesNativeAdapters,
  ...generateNativeAdapters,
  ...deploymentAdapters,
  ...converseAdapters,
  ...serviceAccountAdapters,
  ...relayAdapters,
]);

function buildRegistry(adapters: ChannelAdapter[]): Map<string, ChannelAdapter> {
  const map = new Map<string, ChannelAdapter>();
  for (const a of adapters) {
    if (map.has(a.channel)) throw new Error(`adapter for ${a.channel} is registered twice`);
    map.set(a.channel, a);
  }
  return map;
}
