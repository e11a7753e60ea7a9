import type { UsageFieldTable } from './usage-field-table.ts';

const REASONING = 'completion_tokens_details.reasoning_tokens';

/**
 * Chat completions: `usage` in the body; in streams the final chunk (choices: []) carries it,
 * or, from Moonshot, the last chunk's `choices[0].usage` (read only when the chunk has no
 * top-level usage). Reasoning is part of `completion_tokens` (OpenAI, DeepSeek, OpenRouter),
 * except from xAI, whose `total_tokens` is prompt + completion + reasoning: reasoning is added
 * to the output only when the total says so, as any compatible channel may point at xAI.
 * Cache hits: `prompt_tokens_details.cached_tokens`, else Moonshot's top-level
 * `cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`. Cache writes, part of
 * `prompt_tokens`: `prompt_tokens_details.cache_write_tokens` (OpenRouter,
 * openrouter.ai/docs/use-cases/usage-accounting; OpenAI's GPT-5.6 and later), else Alibaba Model Studio's (DashScope)
 * explicit-cache `prompt_tokens_details.cache_creation_input_tokens`, billed at 125% of input
 * (alibabacloud.com/help/en/model-studio/context-cache). Audio, part of `prompt_tokens` and of
 * `completion_tokens`: `prompt_tokens_details.audio_tokens` and
 * `completion_tokens_details.audio_tokens` (OpenAI's CompletionUsage, gpt-4o-audio-preview and
 * the other audio chat models; platform.openai.com/docs/api-reference/chat/object).
 */
export const completionsUsageFields: UsageFieldTable = {
  style: 'completions',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'prompt_tokens', unified: 'input_tokens' },
    { raw: 'completion_tokens', unified: 'output_tokens' },
    { raw: REASONING, unified: 'output_tokens', onlyIf: { total: 'total_tokens', equalsSumOf: ['prompt_tokens', 'completion_tokens', REASONING] } },
    { raw: 'prompt_tokens_details.cached_tokens', unified: 'cached_tokens', fallback: ['cached_tokens', 'prompt_cache_hit_tokens'] },
    { raw: 'prompt_tokens_details.cache_write_tokens', unified: 'cache_write_tokens', fallback: 'prompt_tokens_details.cache_creation_input_tokens' },
    { raw: 'prompt_tokens_details.audio_tokens', unified: 'audio_input_tokens' },
    { raw: 'completion_tokens_details.audio_tokens', unified: 'audio_output_tokens' },
    { raw: REASONING, unified: 'reasoning_tokens' },
  ],
  stream: [
    { usagePath: 'usage', merge: 'replace' },
    { usagePath: 'choices.0.usage', merge: 'replace', fallback: true },
  ],
  streamHint: /"usage"\s*:\s*\{/,
};
