import { DataPlaneError } from '../data-plane-error.ts';
import { caseFoldedName } from './case-folded-name.ts';
import { locateMembers } from './locate-members.ts';
import { ROUTING_INPUT_MEMBERS, ROUTING_SMALL_MEMBERS } from './routing-members.ts';

/**
 * Top-level members a body may hold once only: routing and the channel notes' rules read the
 * last (JSON.parse's), an upstream may read the first, and the usage request is spliced into
 * one `stream_options`. A second copy could pass a rule or stream without usage.
 */
const SINGLE_MEMBERS: readonly string[] = ['stream_options', ...ROUTING_SMALL_MEMBERS, ...ROUTING_INPUT_MEMBERS];
const SINGLE_SET: ReadonlySet<string> = new Set(SINGLE_MEMBERS);
// "model" or one of these as a key (a string and its colon): one search for them all, not one per name.
const KEYS = new RegExp(`"(model|${SINGLE_MEMBERS.join('|')})"[\\t\\n\\r ]*:`, 'g');

/**
 * Whether a parsed body (`raw`, decoded as `text`) may hold a second "model" (routing read the
 * last), refusing one with a second member of SINGLE_MEMBERS. Looked for in the text: cheaper
 * than in the bytes. A key may also be spelled with \u escapes (JSON.parse decodes them): only
 * when the text has such an escape of an ASCII letter, or one of these keys occurs twice (also
 * nested or inside a string: the search does not know) while the parsed body has it at its top
 * level, are the top-level members located.
 */
export function checkRepeatedMembers(raw: Buffer, text: string, value: Readonly<Record<string, unknown>>): boolean {
  let models = 0;
  let repeated = spellsKeyWithEscape(text);
  const seen: string[] = [];
  KEYS.lastIndex = 0;
  for (let match = repeated ? null : KEYS.exec(text); match !== null; match = KEYS.exec(text)) {
    const key = match[1]!;
    if (key === 'model') models++;
    // Not a top-level member of the parsed body: its copies are nested (an Anthropic message's
    // tool_use blocks each have an "input"), and no second top-level copy can exist.
    else if (!Object.hasOwn(value, key)) continue;
    else if (seen.includes(key)) {
      repeated = true;
      break;
    } else seen.push(key);
  }
  if (!repeated) return models > 1;
  const { members } = locateMembers(raw);
  refuseRepeatedMembers(members);
  return members.filter((m) => m.key === 'model').length > 1;
}

/** Refuses a body with two top-level members of one of SINGLE_MEMBERS (keys as decoded). */
export function refuseRepeatedMembers(members: readonly { readonly key: string }[]): void {
  const seen = new Set<string>();
  for (const { key } of members) {
    if (!SINGLE_SET.has(key)) continue;
    if (seen.has(key)) throw new DataPlaneError('invalid_request_body', `The body has more than one top-level "${key}" member.`);
    seen.add(key);
  }
}

/** Every top-level name routing reads, by its case-folded spelling (caseFoldedName). */
const READ_NAMES = ['model', ...SINGLE_MEMBERS];
const READ_BY_FOLDED: ReadonlyMap<string, string> = new Map(READ_NAMES.map((name) => [caseFoldedName(name), name]));
/** Case folding never shortens a name: a longer key folds to none of them. */
const LONGEST_READ_NAME = Math.max(...READ_NAMES.map((name) => name.length));
const LOWERCASE_ASCII = /^[a-z0-9_]*$/;
/** Whether every name routing reads is lowercase ASCII, which lets such a key skip the folding (caseVariantOf). */
const READ_NAMES_LOWERCASE = READ_NAMES.every((name) => LOWERCASE_ASCII.test(name));

/**
 * The name routing reads that `key` (a top-level key, as decoded) spells in other case, if it
 * does: "Model", "MODEL", "ſtream". Go's encoding/json (Ollama, Go relays) matches a member to
 * its field without regard to case, the last in the body winning (golang/go#43664), so an
 * upstream would serve the model or stream flag such a member names, not the one routed.
 */
export function caseVariantOf(key: string): string | undefined {
  // Nearly every key a client sends is lowercase ASCII, which folds to a lowercase ASCII name only by being it.
  if (key.length > LONGEST_READ_NAME || (READ_NAMES_LOWERCASE && LOWERCASE_ASCII.test(key))) return undefined;
  const name = READ_BY_FOLDED.get(caseFoldedName(key));
  return name === key ? undefined : name;
}

/** Refuses a body with a top-level key that spells a name routing reads in other case (caseVariantOf). */
export function refuseCaseVariants(keys: Iterable<string>): void {
  for (const key of keys) {
    const name = caseVariantOf(key);
    if (name !== undefined) throw new DataPlaneError('invalid_request_body', `The body has a top-level "${key}" member, which an upstream may read as "${name}".`);
  }
}

/**
 * Whether the text has an escape that could spell a letter or `_` of these keys (U+0050 to
 * U+007F): escaped non-ASCII text (Python's json.dumps escapes all of it) spells none, and does
 * not pay for the member scan.
 */
function spellsKeyWithEscape(text: string): boolean {
  return text.includes('\\u') && ASCII_KEY_ESCAPE.test(text);
}

const ASCII_KEY_ESCAPE = /\\u00[5-7][0-9a-fA-F]/;
