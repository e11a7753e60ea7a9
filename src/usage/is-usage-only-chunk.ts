/**
 * A completions stream chunk that exists only to carry usage (`usage` plus `choices: []`, or
 * no `choices` member at all, as some compatible upstreams send it), the one the gateway drops
 * when it asked for usage on the client's behalf.
 */
export function isUsageOnlyChunk(chunk: unknown): boolean {
  if (chunk === null || typeof chunk !== 'object') return false;
  const { usage } = chunk as { usage?: unknown };
  if (usage === null || typeof usage !== 'object') return false;
  if (!Object.hasOwn(chunk, 'choices')) return true;
  const { choices } = chunk as { choices?: unknown };
  return Array.isArray(choices) && choices.length === 0;
}
