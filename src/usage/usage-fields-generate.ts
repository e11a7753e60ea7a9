import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * Generate: `candidatesTokenCount` excludes thoughts, so the unified output adds
 * `thoughtsTokenCount`; tool-use prompt tokens are billed as input. Stream chunks repeat
 * cumulative `usageMetadata`, the last one wins.
 */
export const generateUsageFields: UsageFieldTable = {
  style: 'generate',
  bodyUsagePath: 'usageMetadata',
  fields: [
    { raw: 'promptTokenCount', unified: 'input_tokens' },
    { raw: 'toolUsePromptTokenCount', unified: 'input_tokens' },
    { raw: 'candidatesTokenCount', unified: 'output_tokens' },
    { raw: 'thoughtsTokenCount', unified: 'output_tokens' },
    { raw: 'cachedContentTokenCount', unified: 'cached_tokens' },
    { raw: 'thoughtsTokenCount', unified: 'reasoning_tokens' },
  ],
  stream: [{ usagePath: 'usageMetadata', merge: 'replace' }],
  streamHint: /"usageMetadata"/,
};
