/**
 * A completions stream chunk that exists only to carry usage (`usage` plus `choices: []`, or
 * `choices: null` or no `choices` member at all, as some compatible upstreams send it), the one
 * the gateway drops when it asked for usage on the client's behalf: a client that did not ask
 * expects none (the openai SDK's stream helper fails on a null `choices`).
 */
export function isUsageOnlyChunk(chunk: unknown): boolean {
  if (chunk === null || typeof chunk !== 'object') return false;
  const { usage } = chunk as { usage?: unknown };
  if (usage === null || typeof usage !== 'object') return false;
  if (!Object.hasOwn(chunk, 'choices')) return true;
  const { choices } = chunk as { choices?: unknown };
  return choices === null || (Array.isArray(choices) && choices.length === 0);
}
