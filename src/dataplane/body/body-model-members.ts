import { googleModelResource } from '../google-model-resource.ts';
import { locateElements, locateMembers, type MemberSpan, type ObjectLayout } from './locate-members.ts';

/**
 * Path-model operations whose body names the model again (Gemini's request messages), each with
 * where, as JsonMemberScanner keys it: a top-level member (`model`), a member of a top-level
 * object (`parent.model`) or of each object in a top-level array (`list[].model`). Only
 * path-model operations: a body-model operation's top-level `model` is the routed one, spliced
 * on its own.
 */
const BODY_MODELS: Readonly<Record<string, string>> = {
  'embed-content': 'model', // EmbedContentRequest.model
  'count-tokens': 'generateContentRequest.model', // CountTokensRequest.generateContentRequest.model
  'batch-embed-contents': 'requests[].model', // BatchEmbedContentsRequest.requests[].model
};
/** How a body may name the model: bare, or as a resource name. */
const NAME_PREFIXES = ['', 'models/'];

/** What one attempt maps in the body's own model members. */
export interface BodyModelMapping {
  /** The members' key as JsonMemberScanner reports them (`requests[].model`). */
  readonly key: string;
  readonly external: string;
  readonly upstream: string;
}

/** The scanner key of the operation's body model members, when its body has them. */
export function bodyModelKey(operation: string): string | undefined {
  return BODY_MODELS[operation];
}

/** The mapping an attempt applies to the body's model members; undefined when it changes nothing. */
export function bodyModelMapping(operation: string, external: string | undefined, upstream: string | null): BodyModelMapping | undefined {
  const key = bodyModelKey(operation);
  if (key === undefined || external === undefined || upstream === null || external === upstream) return undefined;
  return { key, external, upstream };
}

/**
 * The nested model members of a whole body (in every duplicate parent), keyed as the scanner
 * keys them. A top-level key's members are the layout's own, so none are added for it.
 */
export function locateBodyModels(json: Buffer, layout: ObjectLayout, key: string): MemberSpan[] {
  const dot = key.lastIndexOf('.');
  if (dot < 0) return [];
  const member = key.slice(dot + 1);
  const inList = key.endsWith('[]', dot);
  const parent = key.slice(0, inList ? dot - 2 : dot);
  const found: MemberSpan[] = [];
  for (const { start } of layout.members.filter((m) => m.key === parent)) {
    const objects = inList ? (json[start] === 0x5b ? locateElements(json, start) : []) : [{ start }];
    for (const object of objects) {
      if (json[object.start] !== 0x7b) continue;
      for (const m of locateMembers(json, object.start).members) if (m.key === member) found.push({ key, start: m.start, end: m.end });
    }
  }
  return found;
}

/**
 * The bytes that replace a body model member's `value` when it names the routed model, spelt
 * as the client spelt it (an upstream model given as a resource name, `models/x` or
 * `tunedModels/x`, as given). Any other value (another model, not a string) stays as sent: the
 * upstream answers it as it would directly.
 */
export function mappedBodyModel(value: Buffer, listed: BodyModelMapping): Buffer | undefined {
  if (value[0] !== 0x22) return undefined;
  const name = JSON.parse(value.toString('utf8')) as string;
  const prefix = NAME_PREFIXES.find((p) => name === p + listed.external);
  if (prefix === undefined) return undefined;
  const upstream = googleModelResource(listed.upstream) === undefined ? prefix + listed.upstream : listed.upstream;
  return Buffer.from(JSON.stringify(upstream), 'utf8');
}
