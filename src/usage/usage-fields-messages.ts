import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * Messages: upstream `input_tokens` excludes cache reads and cache writes, so the unified
 * input is their sum; the writes are also the unified `cache_write_tokens` (the 1-hour ones,
 * `cache_creation.ephemeral_1h_input_tokens`, billed higher still, are among them and get the
 * one write price). Extended thinking is `output_tokens_details.thinking_tokens`, a part of
 * `output_tokens` (the billed total, which holds it): read as reasoning, never added to the
 * output. In streams message_start carries the input side and message_delta the cumulative
 * output and its thinking part (and, on newer upstreams, cumulative input counters too).
 */
export const messagesUsageFields: UsageFieldTable = {
  style: 'messages',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'input_tokens', unified: 'input_tokens' },
    { raw: 'cache_read_input_tokens', unified: 'input_tokens' },
    { raw: 'cache_creation_input_tokens', unified: 'input_tokens' },
    { raw: 'output_tokens', unified: 'output_tokens' },
    { raw: 'cache_read_input_tokens', unified: 'cached_tokens' },
    { raw: 'cache_creation_input_tokens', unified: 'cache_write_tokens' },
    { raw: 'output_tokens_details.thinking_tokens', unified: 'reasoning_tokens' },
  ],
  stream: [
    { eventType: 'message_start', usagePath: 'message.usage', merge: 'overlay' },
    { eventType: 'message_delta', usagePath: 'usage', merge: 'overlay' },
  ],
  streamHint: /"type"\s*:\s*"message_(?:start|delta)"/,
};
