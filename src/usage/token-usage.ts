/** Wire styles whose responses carry token usage. */
export type UsageStyle = 'completions' | 'responses' | 'messages' | 'generate' | 'embeddings' | 'rerank' | 'suite';

/**
 * Unified token usage. `input_tokens` counts every prompt token (cached ones included),
 * `cached_tokens` is the part of it read from a cache, `cache_write_tokens` the part written to
 * one; `output_tokens` counts every generated token (reasoning included), `reasoning_tokens` is
 * the part of it spent on reasoning.
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  /**
   * Absent means 0. Optional, and present only when the upstream reported it, because the log
   * record's `usage` is this type and the log stores keep the four counters above only: the
   * count prices a request (computeCost) and is not stored.
   */
  cache_write_tokens?: number;
}

export type UnifiedUsageField = keyof TokenUsage;

/** Whether a usage reports any token (a queued response reports none). */
export function hasTokens(usage: TokenUsage): boolean {
  return usage.input_tokens + usage.output_tokens > 0;
}

export function emptyUsage(): TokenUsage {
  return { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
}
