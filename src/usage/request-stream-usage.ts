import { CHANNELS, type ChannelId } from '../generated/index.ts';

/** Whether a completions request streams without asking for usage (`stream_options.include_usage`). */
export function streamUsageMissing(body: Record<string, unknown>): boolean {
  if (body['stream'] !== true) return false;
  const options = body['stream_options'];
  return !(options !== null && typeof options === 'object' && (options as Record<string, unknown>)['include_usage'] === true);
}

/**
 * Makes a streaming completions request ask for usage (`stream_options.include_usage`).
 * Returns true when it had to add it, i.e. the client did not ask and the usage-only chunk
 * must not be passed to the client.
 */
export function requestStreamUsage(body: Record<string, unknown>): boolean {
  if (!streamUsageMissing(body)) return false;
  const options = body['stream_options'];
  const existing = options !== null && typeof options === 'object' && !Array.isArray(options)
    ? (options as Record<string, unknown>)
    : {};
  body['stream_options'] = { ...existing, include_usage: true };
  return true;
}

/**
 * Whether the gateway asks the channel's upstream for stream usage: not when its manifest says
 * `stream_usage: unasked` (it sends usage on its last chunk anyway and refuses `stream_options`).
 */
export function asksStreamUsage(channel: string): boolean {
  return CHANNELS[channel as ChannelId]?.stream_usage !== 'unasked';
}
