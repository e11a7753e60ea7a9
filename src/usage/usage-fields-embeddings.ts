import type { UsageFieldTable } from './usage-field-table.ts';

/** Chat-style embeddings: only prompt tokens; never streamed. */
export const embeddingsUsageFields: UsageFieldTable = {
  style: 'embeddings',
  bodyUsagePath: 'usage',
  fields: [{ raw: 'prompt_tokens', unified: 'input_tokens' }],
  stream: [],
  streamHint: /(?!)/,
};
