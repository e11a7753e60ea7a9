import type { UsageFieldTable } from './usage-field-table.ts';

/** Chat completions: `usage` in the body; in streams the final chunk (choices: []) carries it. */
export const completionsUsageFields: UsageFieldTable = {
  style: 'completions',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'prompt_tokens', unified: 'input_tokens' },
    { raw: 'completion_tokens', unified: 'output_tokens' },
    { raw: 'prompt_tokens_details.cached_tokens', unified: 'cached_tokens' },
    { raw: 'completion_tokens_details.reasoning_tokens', unified: 'reasoning_tokens' },
  ],
  stream: [{ usagePath: 'usage', merge: 'replace' }],
  streamHint: /"usage"\s*:\s*\{/,
};
