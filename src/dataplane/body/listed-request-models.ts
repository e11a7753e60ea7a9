import { locateElements, locateMembers, type MemberSpan, type ObjectLayout } from './locate-members.ts';

/**
 * Path-model operations whose body lists requests that name the model again: the top-level
 * array and the member of each of its objects that names it.
 */
const MODEL_LISTS: Readonly<Record<string, { readonly list: string; readonly member: string }>> = {
  'batch-embed-contents': { list: 'requests', member: 'model' },
};
/** How a listed request may name the model: bare, or as a resource name. */
const NAME_PREFIXES = ['', 'models/'];

/** What one attempt maps in the listed requests. */
export interface ListedModels {
  /** The members' key as JsonMemberScanner reports them (`requests[].model`). */
  readonly key: string;
  readonly external: string;
  readonly upstream: string;
}

/** The scanner key of the operation's listed request models, when its body has them. */
export function listedModelKey(operation: string): string | undefined {
  const entry = MODEL_LISTS[operation];
  return entry === undefined ? undefined : `${entry.list}[].${entry.member}`;
}

/** The mapping an attempt applies to the listed requests; undefined when it changes nothing. */
export function listedModels(operation: string, external: string | undefined, upstream: string | null): ListedModels | undefined {
  const key = listedModelKey(operation);
  if (key === undefined || external === undefined || upstream === null || external === upstream) return undefined;
  return { key, external, upstream };
}

/** The listed request models of a whole body (every duplicate list included), keyed as the scanner keys them. */
export function locateListedModels(json: Buffer, layout: ObjectLayout, key: string): MemberSpan[] {
  const [list, member] = key.split('[].') as [string, string];
  const found: MemberSpan[] = [];
  for (const { start } of layout.members.filter((m) => m.key === list && json[m.start] === 0x5b)) {
    for (const element of locateElements(json, start)) {
      if (json[element.start] !== 0x7b) continue;
      for (const m of locateMembers(json, element.start).members) if (m.key === member) found.push({ key, start: m.start, end: m.end });
    }
  }
  return found;
}

/**
 * The bytes that replace a listed request's model `value` when it names the routed model,
 * spelt as the client spelt it. Any other value (another model, not a string) stays as sent:
 * the upstream answers it as it would directly.
 */
export function mappedListedModel(value: Buffer, listed: ListedModels): Buffer | undefined {
  if (value[0] !== 0x22) return undefined;
  const name = JSON.parse(value.toString('utf8')) as string;
  const prefix = NAME_PREFIXES.find((p) => name === p + listed.external);
  return prefix === undefined ? undefined : Buffer.from(JSON.stringify(prefix + listed.upstream), 'utf8');
}
