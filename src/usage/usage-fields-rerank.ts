import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * Rerank at /v1/rerank: `usage.total_tokens` in the body, the tokens of the query and the
 * documents. Some upstreams also send `prompt_tokens` (and a zero `completion_tokens`); the
 * total alone is read, so that no count is taken twice. Never streamed.
 */
export const rerankUsageFields: UsageFieldTable = {
  style: 'rerank',
  bodyUsagePath: 'usage',
  fields: [{ raw: 'total_tokens', unified: 'input_tokens' }],
  stream: [],
  streamHint: /(?!)/,
};
