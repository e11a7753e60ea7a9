import { streamUsageMissing } from '../../usage/index.ts';

const STREAM_USAGE_MEMBER = Buffer.from(',"stream_options":{"include_usage":true}');
const CLOSE_BRACE = 0x7d;

export interface JsonAttemptBody {
  body: Buffer;
  /** `stream_options.include_usage` was added on the client's behalf. */
  addedStreamUsage: boolean;
}

/**
 * The JSON body one upstream attempt sends: the client's own bytes whenever nothing changes,
 * so numbers, key order and unknown fields arrive exactly as sent. A stream-usage request the
 * client did not make is spliced in; only a changed model re-serializes the object.
 */
export function jsonAttemptBody(
  raw: Buffer,
  value: Record<string, unknown>,
  upstreamModel: string | null,
  requestStreamUsage: ((body: Record<string, unknown>) => boolean) | undefined,
): JsonAttemptBody {
  const remap = upstreamModel !== null && value['model'] !== upstreamModel;
  const addsUsage = requestStreamUsage !== undefined && streamUsageMissing(value);
  if (!remap && !addsUsage) return { body: raw, addedStreamUsage: false };
  if (!remap && !('stream_options' in value)) {
    const close = raw.lastIndexOf(CLOSE_BRACE);
    return { body: Buffer.concat([raw.subarray(0, close), STREAM_USAGE_MEMBER, raw.subarray(close)]), addedStreamUsage: true };
  }
  const copy = { ...value };
  if (addsUsage) requestStreamUsage(copy);
  if (remap) copy['model'] = upstreamModel;
  return { body: Buffer.from(JSON.stringify(copy)), addedStreamUsage: addsUsage };
}
