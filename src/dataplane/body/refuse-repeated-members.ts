import { DataPlaneError } from '../data-plane-error.ts';
import { locateMembers } from './locate-members.ts';

/**
 * Top-level members a body may hold once only: the usage request is spliced into one of them,
 * and an upstream reading another (the first) could stream without usage or not stream at all.
 */
const SINGLE_MEMBERS = ['stream', 'stream_options'];
const SINGLE_KEYS = SINGLE_MEMBERS.map((key) => `"${key}"`);

/**
 * Whether a parsed body (`raw`, decoded as `text`) may hold a second "model" (routing read the
 * last), refusing one with a second "stream" or "stream_options". Looked for in the text:
 * cheaper than in the bytes. A key may also be spelled with \u escapes (JSON.parse decodes
 * them): only when the text has such an escape of an ASCII letter, or a single member's
 * literal key occurs twice, are the top-level members located.
 */
export function checkRepeatedMembers(raw: Buffer, text: string): boolean {
  const repeatsModel = occursTwice(text, '"model"');
  if (!spellsKeyWithEscape(text) && !SINGLE_KEYS.some((key) => occursTwice(text, key))) return repeatsModel;
  const { members } = locateMembers(raw);
  refuseRepeatedMembers(members);
  return repeatsModel || members.filter((m) => m.key === 'model').length > 1;
}

/** Refuses a body with two top-level members of one of SINGLE_MEMBERS (keys as decoded). */
export function refuseRepeatedMembers(members: readonly { readonly key: string }[]): void {
  for (const key of SINGLE_MEMBERS) {
    if (members.filter((m) => m.key === key).length > 1) throw new DataPlaneError('invalid_request_body', `The body has more than one top-level "${key}" member.`);
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

// Two forward searches cost less than a backward one.
function occursTwice(text: string, key: string): boolean {
  const first = text.indexOf(key);
  return first !== -1 && text.indexOf(key, first + key.length) !== -1;
}
