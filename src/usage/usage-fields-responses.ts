import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * Responses: `usage` in the body; in streams the terminal response.* event's `response.usage`.
 * Image results share these names (the images body's top-level `usage`, with
 * input_tokens_details.text_tokens/image_tokens that input_tokens already sums: the image part
 * is the unified `image_input_tokens`; OpenAI's ImagesResponse.usage, gpt-image-1, its
 * image_generation.completed and image_edit.completed events alike,
 * platform.openai.com/docs/api-reference/images/object); an image stream's completed event
 * carries its `usage` at the top level. The Responses API itself reports no per-modality input.
 * Cache writes, part of `input_tokens`: `input_tokens_details.cache_write_tokens` (GPT-5.6 and
 * later bill them above input; developers.openai.com/api/docs/guides/prompt-caching).
 */
export const responsesUsageFields: UsageFieldTable = {
  style: 'responses',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'input_tokens', unified: 'input_tokens' },
    { raw: 'output_tokens', unified: 'output_tokens' },
    { raw: 'input_tokens_details.cached_tokens', unified: 'cached_tokens' },
    { raw: 'input_tokens_details.cache_write_tokens', unified: 'cache_write_tokens' },
    { raw: 'input_tokens_details.image_tokens', unified: 'image_input_tokens' },
    { raw: 'output_tokens_details.reasoning_tokens', unified: 'reasoning_tokens' },
  ],
  stream: [
    { eventType: 'response.completed', usagePath: 'response.usage', merge: 'replace' },
    { eventType: 'response.incomplete', usagePath: 'response.usage', merge: 'replace' },
    { eventType: 'response.failed', usagePath: 'response.usage', merge: 'replace' },
    { eventType: 'image_generation.completed', usagePath: 'usage', merge: 'replace' },
    { eventType: 'image_edit.completed', usagePath: 'usage', merge: 'replace' },
  ],
  streamHint: /"type"\s*:\s*"(?:response\.(?:completed|incomplete|failed)|image_(?:generation|edit)\.completed)"/,
};
