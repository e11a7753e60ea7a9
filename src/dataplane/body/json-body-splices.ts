import { mappedBodyModel, type BodyModelMapping } from './body-model-members.ts';
import { locateMembers, type MemberSpan } from './locate-members.ts';

/** Bytes [start, end) of the body replaced by `bytes` (start === end inserts). */
export interface Splice {
  readonly start: number;
  readonly end: number;
  readonly bytes: Buffer;
}

export const STREAM_USAGE_MEMBER = Buffer.from(',"stream_options":{"include_usage":true}');
const STREAM_USAGE_OBJECT = Buffer.from('{"include_usage":true}');
const INCLUDE_USAGE_FIRST = Buffer.from('"include_usage":true');
const INCLUDE_USAGE_NEXT = Buffer.from(',"include_usage":true');
const TRUE = Buffer.from('true');

/**
 * The edits one upstream attempt makes to a JSON object body, everything else staying byte for
 * byte: every top-level "model" value becomes `upstreamModel` (a duplicate key cannot smuggle
 * another model past the mapping, whichever one the upstream honours), and with
 * `addStreamUsage` the last `stream_options` (the one JSON.parse reads) asks for usage. With
 * `listed` (path-model operations only, so `upstreamModel` is undefined and a top-level
 * `model` is spliced once), the body's own model members (`layout` holds them under
 * `listed.key`) that name the routed model name the upstream one. `valueOf` gives a member's
 * value bytes (undefined when too large to keep); only stream_options' and the listed models'
 * are read.
 */
export function attemptSplices<M extends MemberSpan>(
  layout: { readonly members: readonly M[]; readonly close: number },
  valueOf: (member: M) => Buffer | undefined,
  upstreamModel: string | undefined,
  addStreamUsage: boolean,
  listed?: BodyModelMapping,
): Splice[] {
  const splices: Splice[] = [];
  const model = upstreamModel === undefined ? undefined : Buffer.from(JSON.stringify(upstreamModel), 'utf8');
  let options: M | undefined;
  for (const member of layout.members) {
    if (member.key === 'model' && model !== undefined) splices.push({ start: member.start, end: member.end, bytes: model });
    else if (member.key === 'stream_options') options = member;
    else if (member.key === listed?.key) {
      const value = valueOf(member);
      const bytes = value === undefined ? undefined : mappedBodyModel(value, listed);
      if (bytes !== undefined) splices.push({ start: member.start, end: member.end, bytes });
    }
  }
  if (addStreamUsage) {
    if (options === undefined) splices.push({ start: layout.close, end: layout.close, bytes: STREAM_USAGE_MEMBER });
    else splices.push(...includeUsage(valueOf(options)!, options.start));
  }
  return splices.sort((a, b) => a.start - b.start);
}

// As requestStreamUsage does on the parsed object: an object gains (or has set) include_usage,
// anything else is replaced by an object that asks for usage.
function includeUsage(value: Buffer, offset: number): Splice[] {
  if (value[0] !== 0x7b) return [{ start: offset, end: offset + value.length, bytes: STREAM_USAGE_OBJECT }];
  const inner = locateMembers(value);
  const flags = inner.members.filter((m) => m.key === 'include_usage');
  if (flags.length > 0) return flags.map((m) => ({ start: offset + m.start, end: offset + m.end, bytes: TRUE }));
  const at = offset + inner.close;
  return [{ start: at, end: at, bytes: inner.members.length === 0 ? INCLUDE_USAGE_FIRST : INCLUDE_USAGE_NEXT }];
}

/** `raw` with the splices (sorted, not overlapping) applied. */
export function applySplices(raw: Buffer, splices: readonly Splice[]): Buffer {
  const pieces: Buffer[] = [];
  let at = 0;
  for (const splice of splices) {
    pieces.push(raw.subarray(at, splice.start), splice.bytes);
    at = splice.end;
  }
  pieces.push(raw.subarray(at));
  return Buffer.concat(pieces);
}

/** How much the splices change the body's length. */
export function spliceDelta(splices: readonly Splice[]): number {
  return splices.reduce((sum, s) => sum + s.bytes.length - (s.end - s.start), 0);
}
