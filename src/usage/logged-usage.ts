import type { TokenUsage } from './token-usage.ts';

/**
 * The counters a log record keeps: the optional ones (cache writes, audio, images) price the
 * request (computeCost) but are not stored, so every log store shows the same four. The usage
 * itself, not a copy, when it has none of them (the common case).
 */
export function loggedUsage(usage: TokenUsage): TokenUsage {
  if (usage.cache_write_tokens === undefined && usage.audio_input_tokens === undefined && usage.cached_audio_tokens === undefined && usage.image_input_tokens === undefined && usage.audio_output_tokens === undefined) return usage;
  const { input_tokens, output_tokens, cached_tokens, reasoning_tokens } = usage;
  return { input_tokens, output_tokens, cached_tokens, reasoning_tokens };
}
