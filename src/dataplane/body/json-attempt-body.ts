import { streamUsageMissing } from '../../usage/index.ts';
import { applySplices, attemptSplices } from './json-body-splices.ts';
import { locateMembers } from './locate-members.ts';

const STREAM_USAGE_MEMBER = Buffer.from(',"stream_options":{"include_usage":true}');
const CLOSE_BRACE = 0x7d;

export interface JsonAttemptBody {
  body: Buffer;
  /** `stream_options.include_usage` was added on the client's behalf. */
  addedStreamUsage: boolean;
}

/**
 * The JSON body one upstream attempt sends: the client's own bytes whenever nothing changes,
 * so numbers, key order, duplicate keys and unknown fields arrive exactly as sent. A mapped
 * model and a stream-usage request the client did not make are spliced into those bytes; the
 * object is never re-serialized. `requestStreamUsage` is given for operations that ask for
 * stream usage (completions).
 */
export function jsonAttemptBody(
  raw: Buffer,
  value: Record<string, unknown>,
  upstreamModel: string | null,
  requestStreamUsage: ((body: Record<string, unknown>) => boolean) | undefined,
): JsonAttemptBody {
  const model = upstreamModel !== null && value['model'] !== upstreamModel ? upstreamModel : undefined;
  const addsUsage = requestStreamUsage !== undefined && streamUsageMissing(value);
  if (model === undefined && !addsUsage) return { body: raw, addedStreamUsage: false };
  // The streaming benchmark's case: no need to find the members to append one.
  if (model === undefined && !('stream_options' in value)) {
    const close = raw.lastIndexOf(CLOSE_BRACE);
    return { body: Buffer.concat([raw.subarray(0, close), STREAM_USAGE_MEMBER, raw.subarray(close)]), addedStreamUsage: true };
  }
  const splices = attemptSplices(locateMembers(raw), (m) => raw.subarray(m.start, m.end), model, addsUsage);
  return { body: applySplices(raw, splices), addedStreamUsage: addsUsage };
}
