import { isJsonWhitespace } from './json-whitespace.ts';

/** A top-level member's value, as byte offsets [start, end) into the buffer. */
export interface MemberSpan {
  readonly key: string;
  readonly start: number;
  readonly end: number;
}

export interface ObjectLayout {
  readonly members: MemberSpan[];
  /** Offset of the object's closing brace. */
  readonly close: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Where the members of the JSON object starting at `json[from]` sit. The bytes must already be
 * known to be valid JSON (JSON.parse accepted them, or JsonMemberScanner checked them): only
 * strings and nesting are tracked, so that keys and brackets inside them are skipped.
 */
export function locateMembers(json: Buffer, from = 0): ObjectLayout {
  const members: MemberSpan[] = [];
  let i = skipSpace(json, skipSpace(json, from) + 1);
  while (json[i] !== 0x7d) {
    if (json[i] === 0x2c) i = skipSpace(json, i + 1);
    const keyEnd = stringEnd(json, i);
    // A key without escapes is its own UTF-8 text; parsing is for the rare escaped one.
    const key = json.subarray(i, keyEnd).includes(BACKSLASH) ? (JSON.parse(json.toString('utf8', i, keyEnd)) as string) : json.toString('utf8', i + 1, keyEnd - 1);
    const start = skipSpace(json, skipSpace(json, keyEnd) + 1);
    const end = valueEnd(json, start);
    members.push({ key, start, end });
    i = skipSpace(json, end);
  }
  return { members, close: i };
}

/** Where the elements of the JSON array starting at `json[from]` sit, as [start, end) offsets. */
export function locateElements(json: Buffer, from: number): Array<{ start: number; end: number }> {
  const elements: Array<{ start: number; end: number }> = [];
  let i = skipSpace(json, skipSpace(json, from) + 1);
  while (json[i] !== 0x5d) {
    if (json[i] === 0x2c) i = skipSpace(json, i + 1);
    const end = valueEnd(json, i);
    elements.push({ start: i, end });
    i = skipSpace(json, end);
  }
  return elements;
}

function valueEnd(json: Buffer, start: number): number {
  const c = json[start];
  if (c === QUOTE) return stringEnd(json, start);
  if (c !== 0x7b && c !== 0x5b) {
    let i = start + 1;
    while (i < json.length && !isDelimiter(json[i]!)) i++;
    return i;
  }
  let depth = 1;
  let i = start + 1;
  while (depth > 0) {
    const b = json[i]!;
    if (b === QUOTE) {
      i = stringEnd(json, i);
      continue;
    }
    if (b === 0x7b || b === 0x5b) depth++;
    else if (b === 0x7d || b === 0x5d) depth--;
    i++;
  }
  return i;
}

/** The offset just past the string that opens at `quote`. */
function stringEnd(json: Buffer, quote: number): number {
  let from = quote + 1;
  for (;;) {
    const close = json.indexOf(QUOTE, from);
    let k = close - 1;
    while (json[k] === BACKSLASH) k--;
    // An even run of backslashes escapes itself, not the quote.
    if ((close - 1 - k) % 2 === 0) return close + 1;
    from = close + 1;
  }
}

function skipSpace(json: Buffer, i: number): number {
  while (isJsonWhitespace(json[i]!)) i++;
  return i;
}

function isDelimiter(c: number): boolean {
  return c === 0x2c || c === 0x7d || c === 0x5d || isJsonWhitespace(c);
}
