import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * Chat-style embeddings: only input tokens; never streamed. Some upstreams (Voyage-style)
 * report only `total_tokens`, which for an embedding with no output is the input.
 */
export const embeddingsUsageFields: UsageFieldTable = {
  style: 'embeddings',
  bodyUsagePath: 'usage',
  fields: [{ raw: 'prompt_tokens', unified: 'input_tokens', fallback: 'total_tokens' }],
  stream: [],
  streamHint: /(?!)/,
};
