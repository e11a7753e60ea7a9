import type { UsageFieldTable } from './usage-field-table.ts';

const INPUT_TOKENS = [{ raw: 'input_tokens', unified: 'input_tokens' }] as const;

/**
 * Rerank at /v1/rerank: `usage.total_tokens` in the body, the tokens of the query and the
 * documents (Jina, Voyage). Some upstreams also send `prompt_tokens` (and a zero
 * `completion_tokens`); the total alone is read, so that no count is taken twice. A body with no
 * `usage` has its `tokens.input_tokens` read (SiliconFlow,
 * docs.siliconflow.com/en/api-reference/rerank/create-rerank), else its `meta.tokens.input_tokens`
 * (Cohere-style servers). Cohere's own answer reports billed search units only
 * (`meta.billed_units.search_units`), no tokens: it counts none. Never streamed.
 */
export const rerankUsageFields: UsageFieldTable = {
  style: 'rerank',
  bodyUsagePath: 'usage',
  fields: [{ raw: 'total_tokens', unified: 'input_tokens' }],
  bodyAlternates: [
    { bodyUsagePath: 'tokens', fields: INPUT_TOKENS },
    { bodyUsagePath: 'meta.tokens', fields: INPUT_TOKENS },
  ],
  stream: [],
  streamHint: /(?!)/,
};
