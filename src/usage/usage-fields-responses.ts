import type { UsageFieldTable } from './usage-field-table.ts';

/** Responses: `usage` in the body; in streams the terminal response.* event's `response.usage`. */
export const responsesUsageFields: UsageFieldTable = {
  style: 'responses',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'input_tokens', unified: 'input_tokens' },
    { raw: 'output_tokens', unified: 'output_tokens' },
    { raw: 'input_tokens_details.cached_tokens', unified: 'cached_tokens' },
    { raw: 'output_tokens_details.reasoning_tokens', unified: 'reasoning_tokens' },
  ],
  stream: [
    { eventType: 'response.completed', usagePath: 'response.usage', merge: 'replace' },
    { eventType: 'response.incomplete', usagePath: 'response.usage', merge: 'replace' },
    { eventType: 'response.failed', usagePath: 'response.usage', merge: 'replace' },
  ],
  streamHint: /"type"\s*:\s*"response\.(?:completed|incomplete|failed)"/,
};
