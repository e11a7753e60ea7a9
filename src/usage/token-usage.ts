/** Wire styles whose responses carry token usage. */
export type UsageStyle = 'completions' | 'responses' | 'messages' | 'generate' | 'embeddings' | 'rerank' | 'suite';

/**
 * Unified token usage. `input_tokens` counts every prompt token (cached ones included),
 * `cached_tokens` is the part of it read from a cache, `cache_write_tokens` the part written to
 * one, `audio_input_tokens` and `image_input_tokens` the parts that are audio and images (a
 * cached audio or image token is in both), `cached_audio_tokens` the part of the cached ones
 * that is audio; `output_tokens` counts every generated token
 * (reasoning included), `reasoning_tokens` is the part of it spent on reasoning and
 * `audio_output_tokens` the part that is audio.
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  /**
   * The optional counters: absent means 0. Optional, and present only when the upstream
   * reported them, because the log record's `usage` is this type and the log stores keep the
   * four counters above only: they price a request (computeCost) and are not stored
   * (loggedUsage).
   */
  cache_write_tokens?: number;
  audio_input_tokens?: number;
  cached_audio_tokens?: number;
  image_input_tokens?: number;
  audio_output_tokens?: number;
}

export type UnifiedUsageField = keyof TokenUsage;

/** Whether a usage reports any token (a queued response reports none). */
export function hasTokens(usage: TokenUsage): boolean {
  return usage.input_tokens + usage.output_tokens > 0;
}

export function emptyUsage(): TokenUsage {
  return { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
}
