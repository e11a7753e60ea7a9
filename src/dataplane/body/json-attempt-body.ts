import { streamUsageMissing } from '../../usage/index.ts';
import { applySplices, attemptSplices, STREAM_USAGE_MEMBER } from './json-body-splices.ts';
import { locateBodyModels, type BodyModelMapping } from './body-model-members.ts';
import { locateMembers } from './locate-members.ts';

const CLOSE_BRACE = 0x7d;
const MODEL_KEY = Buffer.from('"model"');

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
 * stream usage (completions); `listed` for path-model operations whose body names the model
 * again.
 */
export function jsonAttemptBody(
  raw: Buffer,
  value: Record<string, unknown>,
  upstreamModel: string | null,
  requestStreamUsage: ((body: Record<string, unknown>) => boolean) | undefined,
  listed?: BodyModelMapping,
  /**
   * Whether `raw` may hold more than one top-level model, when the caller knows (it searched the
   * decoded text, which is cheaper, and counted the members when a key may be spelled with escapes).
   */
  repeatsModel?: boolean,
): JsonAttemptBody {
  // Routing read the last "model" (JSON.parse's); a body that may hold another one has every
  // one spliced, so that an upstream reading the first cannot be sent a model the key may not use.
  const model = upstreamModel !== null && (value['model'] !== upstreamModel || (repeatsModel ?? raw.indexOf(MODEL_KEY) !== raw.lastIndexOf(MODEL_KEY))) ? upstreamModel : undefined;
  const addsUsage = requestStreamUsage !== undefined && streamUsageMissing(value);
  if (model === undefined && !addsUsage && listed === undefined) return { body: raw, addedStreamUsage: false };
  // The streaming benchmark's case: no need to find the members to append one.
  if (model === undefined && listed === undefined && !('stream_options' in value)) {
    const close = raw.lastIndexOf(CLOSE_BRACE);
    const body = Buffer.allocUnsafe(raw.length + STREAM_USAGE_MEMBER.length);
    raw.copy(body, 0, 0, close);
    STREAM_USAGE_MEMBER.copy(body, close);
    raw.copy(body, close + STREAM_USAGE_MEMBER.length, close);
    return { body, addedStreamUsage: true };
  }
  const layout = locateMembers(raw);
  const members = listed === undefined ? layout.members : [...layout.members, ...locateBodyModels(raw, layout, listed.key)];
  const splices = attemptSplices({ members, close: layout.close }, (m) => raw.subarray(m.start, m.end), model, addsUsage, listed);
  return { body: applySplices(raw, splices), addedStreamUsage: addsUsage };
}
