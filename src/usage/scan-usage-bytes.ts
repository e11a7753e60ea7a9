import type { CompiledUsageTable, RawUsageCounters } from './map-raw-usage.ts';
import { isTokenCount } from './read-path.ts';

/**
 * Reads a usage object's counters straight from JSON bytes, checking the JSON as it goes but
 * building no objects: JSON.parse of a usage chunk or a body's usage tail costs about 0.9 µs,
 * nearly all of it in making the objects, and this runs on every response. Anything it does
 * not read exactly as JSON.parse would (a key with an escape, a usage value that is not an
 * object, deep nesting, bytes that are not JSON) makes it give up (undefined): the caller then
 * parses the text as before, so the outcome never differs from JSON.parse's.
 */
export interface ScannedUsage {
  /** The top-level usage member's counters (the table's field order); undefined when it has none. */
  counters: RawUsageCounters | undefined;
  /**
   * Usage is an object and top-level `choices` an empty array, null or absent: a completions
   * usage-only chunk. Always false for a body's tail, whose members before usage are not seen.
   */
  usageOnlyChunk: boolean;
}

interface KeyNode {
  readonly key: Uint8Array;
  /** Fields whose raw path ends at this key. */
  readonly fields: readonly number[];
  /** Fields anywhere below this key (reset when the key comes again: the last duplicate wins). */
  readonly below: readonly number[];
  readonly children: readonly KeyNode[];
}

/** What to read from one table's usage member: its key and the field paths under it. */
export interface UsageScanPlan {
  readonly usage: KeyNode;
  /** The usage key with its quotes, to find the member in a body. */
  readonly member: Uint8Array;
  /** A counter per field, none read yet: copied for each scan. */
  readonly noCounters: readonly undefined[];
  /** The member is `usage`, which isUsageOnlyChunk reads: an event may be a usage-only chunk. */
  readonly usageOnlyChunks: boolean;
  /**
   * A key that, below the top level, may hold a fallback usage object (Moonshot's
   * `choices[0].usage`): an event without a top-level usage object that has it is left to
   * JSON.parse.
   */
  readonly nested: Uint8Array | undefined;
}

const CHOICES = Buffer.from('choices');
const MAX_DEPTH = 32;
const FAIL = -1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
/** The characters a backslash may escape besides `u`: `"` `\` `/` b f n r t. */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const NULL = Buffer.from('null');
const LITERALS = [Buffer.from('true'), Buffer.from('false'), NULL];

/**
 * What to read for a usage member that is top-level (`usageMember`, the key without its
 * quotes); undefined when a field's path indexes an array, which the scan does not read.
 */
export function usageScanPlan(fields: CompiledUsageTable['fields'], usageMember: string, nestedKey?: string): UsageScanPlan | undefined {
  if (fields.some((f) => f.raw.some((segment) => typeof segment !== 'string'))) return undefined;
  const paths = fields.map((f) => f.raw as readonly string[]);
  return {
    usage: keyNode(usageMember, paths, paths.map((_, i) => i)),
    member: Buffer.from(`"${usageMember}"`),
    noCounters: paths.map(() => undefined),
    usageOnlyChunks: usageMember === 'usage',
    nested: nestedKey === undefined ? undefined : Buffer.from(nestedKey),
  };
}

function keyNode(key: string, paths: readonly (readonly string[])[], indexes: readonly number[]): KeyNode {
  const fields = indexes.filter((i) => paths[i]!.length === 0);
  const nested = indexes.filter((i) => paths[i]!.length > 0);
  const names = [...new Set(nested.map((i) => paths[i]![0]!))];
  const children = names.map((name) => {
    const under = nested.filter((i) => paths[i]![0] === name);
    const rest = paths.map((p) => p.slice(1));
    return keyNode(name, rest, under);
  });
  return { key: Buffer.from(key), fields, below: indexes, children };
}

/**
 * A whole JSON object in `bytes[from, to)` (one SSE event's data): its top-level usage member
 * and `choices`. Line breaks are not JSON whitespace here, since they would end the SSE line.
 */
export function scanUsageEvent(bytes: Uint8Array, from: number, to: number, plan: UsageScanPlan): ScannedUsage | undefined {
  const scan = new Scan(bytes, to, plan, false);
  let at = scan.space(from);
  if (at >= to || bytes[at] !== OPEN_OBJECT) return undefined;
  at = scan.members(scan.space(at + 1), true, 0);
  if (at === FAIL || scan.space(at) !== to) return undefined;
  const result = scan.result();
  return result.counters === undefined && scan.nestedSeen ? undefined : result;
}

/**
 * The members of a top-level JSON object from the key at `from` to the object's end, which
 * must end `bytes` (a body's tail from its usage member). A nested key's tail holds the
 * closing brackets of what surrounds it, so it does not end there: only a top-level member
 * scans.
 */
export function scanUsageTail(bytes: Uint8Array, from: number, plan: UsageScanPlan): ScannedUsage | undefined {
  const scan = new Scan(bytes, bytes.length, plan, true);
  const at = scan.members(from, true, 0);
  return at !== FAIL && scan.space(at) === bytes.length ? scan.result() : undefined;
}

/**
 * The top-level usage member of a JSON object that `bytes` begins (a body's head, which may be
 * cut anywhere after it): the members before it are checked as JSON and skipped, strings and
 * nesting included, so that a `"usage"` inside them is not taken for it. Undefined when the
 * head ends first, or the object has no usage member.
 */
export function scanUsageHead(bytes: Uint8Array, plan: UsageScanPlan): ScannedUsage | undefined {
  const scan = new Scan(bytes, bytes.length, plan, true, true);
  const at = scan.space(0);
  if (at >= bytes.length || bytes[at] !== OPEN_OBJECT) return undefined;
  return scan.members(scan.space(at + 1), true, 0) !== FAIL && scan.usageRead ? scan.result() : undefined;
}

class Scan {
  readonly #bytes: Uint8Array;
  readonly #end: number;
  readonly #plan: UsageScanPlan;
  /**
   * A body's tail: line breaks are JSON whitespace, and the members before usage are not seen
   * (a `choices` member not met may be there).
   */
  readonly #tail: boolean;
  /** A body's head: the scan ends with the top-level usage member's value. */
  readonly #head: boolean;
  readonly #counters: RawUsageCounters;
  /** The top-level usage member's value was read whole. */
  usageRead = false;
  /** The plan's nested key was met below the top level. */
  nestedSeen = false;
  #usageObject = false;
  #choicesSeen = false;
  /** The last `choices` is an empty array or null. */
  #choicesNone = false;

  constructor(bytes: Uint8Array, end: number, plan: UsageScanPlan, tail: boolean, head = false) {
    this.#bytes = bytes;
    this.#end = end;
    this.#plan = plan;
    this.#tail = tail;
    this.#head = head;
    this.#counters = plan.noCounters.slice();
  }

  result(): ScannedUsage {
    const usageOnlyChunk = this.#usageObject && this.#plan.usageOnlyChunks && !this.#tail && (this.#choicesNone || !this.#choicesSeen);
    return { counters: this.#usageObject ? this.#counters : undefined, usageOnlyChunk };
  }

  space(at: number): number {
    const bytes = this.#bytes;
    const end = this.#end;
    while (at < end) {
      const c = bytes[at]!;
      if (c > SPACE) break;
      if (c === SPACE || c === TAB || ((c === LF || c === CR) && this.#tail)) at++;
      else break;
    }
    return at;
  }

  /**
   * Members from a key (or the closing brace of an empty object) through the closing brace;
   * the index after it. `top`: the top-level object, whose usage and choices are read;
   * otherwise `node`'s children are.
   */
  members(at: number, top: boolean, depth: number, node?: KeyNode): number {
    const bytes = this.#bytes;
    if (at < this.#end && bytes[at] === CLOSE_OBJECT) return at + 1;
    for (;;) {
      if (at >= this.#end || bytes[at] !== QUOTE) return FAIL;
      const keyStart = at + 1;
      // Only a key whose name is read must be plain; in a value skipped whole none is. A nested
      // usage key spelled with an escape is not watched for: the stream hint that lets an event
      // be parsed needs a plain `"usage"` too, so neither way reads it.
      const nested = this.#plan.nested;
      const keyEnd = this.#stringEnd(keyStart, top || node !== undefined);
      if (keyEnd === FAIL) return FAIL;
      if (!top && node === undefined && nested !== undefined && keyIs(bytes, nested, keyStart, keyEnd)) this.nestedSeen = true;
      at = this.space(keyEnd + 1);
      if (at >= this.#end || bytes[at] !== COLON) return FAIL;
      at = this.space(at + 1);
      if (top) {
        at = this.#topValue(at, keyStart, keyEnd, depth);
        // What follows in a head may be cut short: its usage member is read.
        if (this.#head && this.usageRead) return at;
      } else {
        const child = node === undefined ? undefined : this.#child(node, keyStart, keyEnd);
        at = child === undefined ? this.#skip(at, depth) : this.#wanted(at, child, depth);
      }
      if (at === FAIL) return FAIL;
      at = this.space(at);
      if (at >= this.#end) return FAIL;
      if (bytes[at] === CLOSE_OBJECT) return at + 1;
      if (bytes[at] !== COMMA) return FAIL;
      at = this.space(at + 1);
    }
  }

  #topValue(at: number, keyStart: number, keyEnd: number, depth: number): number {
    const { usage } = this.#plan;
    if (keyIs(this.#bytes, usage.key, keyStart, keyEnd)) {
      // An array counts as an object where JSON.parse's result is read: left to that reading.
      if (at >= this.#end || this.#bytes[at] === OPEN_ARRAY) return FAIL;
      // Any other value (`"usage": null` on every chunk of some upstreams) is no usage.
      this.#usageObject = this.#bytes[at] === OPEN_OBJECT;
      const end = this.#wanted(at, usage, depth);
      this.usageRead = end !== FAIL;
      return end;
    }
    if (keyIs(this.#bytes, CHOICES, keyStart, keyEnd)) {
      this.#choicesSeen = true;
      const inner = at < this.#end && this.#bytes[at] === OPEN_ARRAY ? this.space(at + 1) : FAIL;
      // `null` is checked as a literal by #skip below, which fails the scan on anything else.
      this.#choicesNone = inner === FAIL ? keyIs(this.#bytes, NULL, at, Math.min(at + NULL.length, this.#end)) : inner < this.#end && this.#bytes[inner] === CLOSE_ARRAY;
    }
    return this.#skip(at, depth);
  }

  /** A value at a key the plan reads: counters where a path ends, an object to go into otherwise. */
  #wanted(at: number, node: KeyNode, depth: number): number {
    const counters = this.#counters;
    // The last duplicate wins, as in JSON.parse: what an earlier one set goes.
    for (const i of node.below) counters[i] = undefined;
    if (node.children.length > 0 && at < this.#end && this.#bytes[at] === OPEN_OBJECT) {
      if (depth >= MAX_DEPTH) return FAIL;
      return this.members(this.space(at + 1), false, depth + 1, node);
    }
    if (node.fields.length === 0) return this.#skip(at, depth);
    const start = at;
    const end = this.#number(at);
    if (end === FAIL) return this.#skip(at, depth);
    const value = this.#numberValue(start, end);
    const count = isTokenCount(value) ? value : undefined;
    for (const i of node.fields) counters[i] = count;
    return end;
  }

  #child(node: KeyNode, keyStart: number, keyEnd: number): KeyNode | undefined {
    for (const child of node.children) if (keyIs(this.#bytes, child.key, keyStart, keyEnd)) return child;
    return undefined;
  }

  /** Any JSON value; the index after it. */
  #skip(at: number, depth: number): number {
    if (at >= this.#end) return FAIL;
    const bytes = this.#bytes;
    const c = bytes[at]!;
    if (c === QUOTE) {
      const end = this.#stringEnd(at + 1, false);
      return end === FAIL ? FAIL : end + 1;
    }
    if (c === OPEN_OBJECT) return depth >= MAX_DEPTH ? FAIL : this.members(this.space(at + 1), false, depth + 1);
    if (c === OPEN_ARRAY) return depth >= MAX_DEPTH ? FAIL : this.#array(this.space(at + 1), depth + 1);
    if (c === MINUS || (c >= ZERO && c <= NINE)) return this.#number(at);
    for (const literal of LITERALS) if (keyIs(this.#bytes, literal, at, Math.min(at + literal.length, this.#end))) return at + literal.length;
    return FAIL;
  }

  #array(at: number, depth: number): number {
    const bytes = this.#bytes;
    if (at < this.#end && bytes[at] === CLOSE_ARRAY) return at + 1;
    for (;;) {
      at = this.#skip(at, depth);
      if (at === FAIL) return FAIL;
      at = this.space(at);
      if (at >= this.#end) return FAIL;
      if (bytes[at] === CLOSE_ARRAY) return at + 1;
      if (bytes[at] !== COMMA) return FAIL;
      at = this.space(at + 1);
    }
  }

  /** The closing quote's index for a string whose text starts at `at`; FAIL if invalid (or, for a key, escaped). */
  #stringEnd(at: number, key: boolean): number {
    const bytes = this.#bytes;
    const end = this.#end;
    while (at < end) {
      const c = bytes[at]!;
      // Most bytes: neither a quote, a backslash nor a control character.
      if (c > BACKSLASH || (c > QUOTE && c < BACKSLASH) || c === SPACE || c === 0x21) {
        at++;
        continue;
      }
      if (c === QUOTE) return at;
      if (c < SPACE) return FAIL;
      // A key with an escape could still spell a wanted name: JSON.parse decides those.
      if (key || at + 1 >= end) return FAIL;
      const next = bytes[at + 1]!;
      if (next === 0x75) {
        if (at + 6 > end) return FAIL;
        for (let i = at + 2; i < at + 6; i++) if (!isHexDigit(bytes[i]!)) return FAIL;
        at += 6;
      } else if (SIMPLE_ESCAPES.has(next)) at += 2;
      else return FAIL;
    }
    return FAIL;
  }

  /** The end of a JSON number starting at `at` (its grammar exactly), or FAIL. */
  #number(at: number): number {
    const bytes = this.#bytes;
    const end = this.#end;
    if (at < end && bytes[at] === MINUS) at++;
    if (at >= end) return FAIL;
    if (bytes[at] === ZERO) at++;
    else if (isDigit(bytes[at]!)) while (at < end && isDigit(bytes[at]!)) at++;
    else return FAIL;
    if (at < end && bytes[at] === DOT) {
      at++;
      if (at >= end || !isDigit(bytes[at]!)) return FAIL;
      while (at < end && isDigit(bytes[at]!)) at++;
    }
    if (at < end && (bytes[at] === LOWER_E || bytes[at] === UPPER_E)) {
      at++;
      if (at < end && (bytes[at] === PLUS || bytes[at] === MINUS)) at++;
      if (at >= end || !isDigit(bytes[at]!)) return FAIL;
      while (at < end && isDigit(bytes[at]!)) at++;
    }
    return at;
  }

  #numberValue(start: number, end: number): number {
    const bytes = this.#bytes;
    // Token counts: short plain integers, summed exactly; anything else as JSON.parse reads it.
    if (end - start <= 15 && bytes[start] !== MINUS) {
      let value = 0;
      let i = start;
      for (; i < end && isDigit(bytes[i]!); i++) value = value * 10 + (bytes[i]! - ZERO);
      if (i === end) return value;
    }
    return Number(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1'));
  }
}

function keyIs(bytes: Uint8Array, key: Uint8Array, start: number, end: number): boolean {
  if (end - start !== key.length) return false;
  for (let i = 0; i < key.length; i++) if (bytes[start + i] !== key[i]) return false;
  return true;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isHexDigit(c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}
