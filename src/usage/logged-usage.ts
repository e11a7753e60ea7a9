import type { TokenUsage } from './token-usage.ts';

/**
 * The counters a log record keeps: the cache write count prices the request (computeCost) but is
 * not stored, so every log store shows the same four. The usage itself when it has none.
 */
export function loggedUsage(usage: TokenUsage): TokenUsage {
  if (usage.cache_write_tokens === undefined) return usage;
  const { input_tokens, output_tokens, cached_tokens, reasoning_tokens } = usage;
  return { input_tokens, output_tokens, cached_tokens, reasoning_tokens };
}
