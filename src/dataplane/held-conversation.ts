import type { ResourceEntry } from '../generated/index.ts';
import { conversationIdOf } from './request-features.ts';
import { resourceKey } from './response-affinity.ts';

/**
 * The remembered-object key of the conversation a responses request continues, where the
 * operation's body may name a previous response (a create, an input-token count, a compaction):
 * the upstream keeps a conversation with the key that created it, as it keeps a response. The
 * gateway creates none (no conversations route), so it learns the holder from the first call
 * naming one that succeeds, and knows no creator.
 */
export function heldConversationKey(resource: ResourceEntry, fields: Record<string, unknown> | undefined): string | undefined {
  if (resource.kind !== 'response' || resource.body_field === undefined || fields === undefined) return undefined;
  const id = conversationIdOf(fields);
  return id === undefined ? undefined : resourceKey('conversation', id);
}
