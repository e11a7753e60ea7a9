/**
 * A completions stream chunk that exists only to carry usage (`choices: []` plus `usage`),
 * the one the gateway drops when it asked for usage on the client's behalf.
 */
export function isUsageOnlyChunk(chunk: unknown): boolean {
  if (chunk === null || typeof chunk !== 'object') return false;
  const { choices, usage } = chunk as { choices?: unknown; usage?: unknown };
  return Array.isArray(choices) && choices.length === 0 && usage !== null && typeof usage === 'object';
}
