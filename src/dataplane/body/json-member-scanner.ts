import { BodyRewriteError } from './body-rewrite-error.ts';
import { isJsonWhitespace } from './json-whitespace.ts';
import { Utf8StreamCheck } from './utf8-stream-check.ts';

// Where the lexer is.
const VALUE = 0; // a value must start
const FIRST_KEY = 1; // just after '{': a key or '}'
const KEY = 2; // after ',' in an object
const COLON = 3;
const FIRST_ELEMENT = 4; // just after '[': a value or ']'
const AFTER_VALUE = 5; // ',' or the closer of the open container
const STRING = 6;
const ESCAPE = 7;
const UNICODE = 8;
const NUMBER = 9;
const LITERAL = 10;
const DONE = 11; // the top-level value is complete: whitespace only

// Position in the number grammar; ZERO, INT, FRAC and EXP may end a number.
const MINUS = 0;
const ZERO = 1;
const INT = 2;
const DOT = 3;
const FRAC = 4;
const E = 5;
const SIGN = 6;
const EXP = 7;

const OBJECT = 0;
const ARRAY = 1;

// Open containers, one byte each: the stack grows with the nesting, so it is bounded by the body's size, as JSON.parse has no depth limit either.
const INITIAL_STACK_BYTES = 64;
const SIMPLE_ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));
const LITERALS = new Map(['true', 'false', 'null'].map((word) => [word.charCodeAt(0), Buffer.from(word)]));
/**
 * Wanted members a body may hold, duplicates and listed requests counted. Each costs a small
 * record, so without a bound a body of tiny duplicates would cost many times its own size.
 */
export const MAX_SCANNED_MEMBERS = 100_000;

/** One top-level member the scanner was asked for; offsets are absolute, [start, end). */
export interface ScannedMember {
  readonly key: string;
  readonly start: number;
  readonly end: number;
  /** The value's first byte, so a value too large to keep still tells its type. */
  readonly first: number;
  /**
   * The value's bytes, or undefined when they exceeded the key's limit or when a later
   * duplicate of the top-level key superseded them (only the last counts, as in JSON.parse).
   */
  readonly raw: Buffer | undefined;
}

export interface ScannedObject {
  /** The wanted members in body order, duplicates included (with their spans). */
  readonly members: ScannedMember[];
  /** Offset of the top-level object's closing brace. */
  readonly close: number;
  /** The first top-level key that is none of the wanted ones but `isCaseVariant` picks out. */
  readonly caseVariant: string | undefined;
}

interface OpenMember {
  readonly key: string;
  readonly start: number;
  readonly first: number;
}

/**
 * Byte-level JSON validator for a body that must be one object, fed chunk by chunk. It checks
 * every byte (structure, escapes, numbers, literals) and reports where the wanted top-level
 * members sit, keeping each one's value bytes up to that key's limit; everything else passes
 * by without being kept. A wanted key `parent.name` asks for the member `name` of the top-level
 * object `parent`, and `list[].name` for that member of each object in the top-level array
 * `list` (neither parent may be wanted itself). Of a top-level key given
 * more than once only the last value is kept: an earlier one is let go when the next starts,
 * so duplicates cannot hold more than one value each in memory. Past `maxMembers` wanted
 * members (duplicates and list elements counted) the body is refused.
 */
export class JsonMemberScanner {
  readonly #wanted: ReadonlyMap<string, number>;
  readonly #maxMembers: number;
  // The longest wanted key written entirely in \u escapes, plus quotes; a longer raw key is none of them.
  readonly #maxKeyBytes: number;
  #state = VALUE;
  #stack = new Uint8Array(INITIAL_STACK_BYTES);
  #depth = 0;
  #chunk: Buffer = Buffer.alloc(0);
  #base = 0; // absolute offset of the current chunk
  #number = MINUS;
  #literal = Buffer.alloc(0);
  #literalPos = 0;
  #hexLeft = 0;
  #stringIsKey = false;
  // Raw bytes of the top-level key or wanted value being read.
  #capture: Buffer[] | undefined;
  #captureBytes = 0;
  #captureLimit = 0;
  #captureFrom = 0;
  #wantedKey: string | undefined;
  #member: OpenMember | undefined;
  #memberDepth = 0;
  // Top-level keys with wanted members in their object or their array's objects, and the one being read.
  readonly #parents: ReadonlySet<string>;
  #parent: string | undefined;
  readonly #members: ScannedMember[] = [];
  // Where each top-level key's last value is in #members, to let it go at the next duplicate.
  readonly #lastOf = new Map<string, number>();
  #closeAt = -1;
  readonly #isCaseVariant: (key: string) => boolean;
  #caseVariant: string | undefined;
  // RFC 8259 §8.1: UTF-8 only. An overlong spelling of a key's letter is U+FFFD here but could
  // be that letter to a lenient decoder upstream.
  readonly #utf8 = new Utf8StreamCheck();

  /**
   * `wanted`: top-level keys to report, each with how many value bytes may be kept.
   * `isCaseVariant`: whether another top-level key (as decoded, up to the longest wanted key's
   * escaped length) spells a wanted one in other case; the first such key is reported.
   */
  constructor(wanted: ReadonlyMap<string, number>, maxMembers = MAX_SCANNED_MEMBERS, isCaseVariant: (key: string) => boolean = () => false) {
    this.#wanted = wanted;
    this.#maxMembers = maxMembers;
    this.#isCaseVariant = isCaseVariant;
    this.#parents = new Set([...wanted.keys()].flatMap((key) => /^(.+?)(?:\[\])?\./.exec(key)?.[1] ?? []));
    this.#maxKeyBytes = Math.max(0, ...[...wanted.keys()].map((key) => Buffer.byteLength(key) * 6)) + 2;
  }

  push(chunk: Buffer): void {
    const notUtf8 = this.#utf8.push(chunk);
    if (notUtf8 !== -1) this.#fail('not UTF-8', notUtf8 - this.#base);
    this.#chunk = chunk;
    this.#captureFrom = 0;
    let i = 0;
    while (i < chunk.length) i = this.#step(chunk, i);
    if (this.#capture !== undefined) this.#captureSegment(chunk.subarray(this.#captureFrom));
    this.#base += chunk.length;
  }

  /** The body ended: what was found, or BodyRewriteError when it is not one whole object. */
  end(): ScannedObject {
    if (this.#state !== DONE) this.#fail('the body ends inside the JSON value', 0);
    return { members: this.#members, close: this.#closeAt, caseVariant: this.#caseVariant };
  }

  // Consumes from chunk[i] and returns the next index to read.
  #step(chunk: Buffer, i: number): number {
    const c = chunk[i]!;
    switch (this.#state) {
      case STRING:
        return this.#string(chunk, i);
      case ESCAPE:
        if (c === 0x75) {
          this.#state = UNICODE;
          this.#hexLeft = 4;
        } else if (SIMPLE_ESCAPES.has(c)) this.#state = STRING;
        else this.#fail('invalid escape', i);
        return i + 1;
      case UNICODE:
        if (!isHex(c)) this.#fail('invalid \\u escape', i);
        if (--this.#hexLeft === 0) this.#state = STRING;
        return i + 1;
      case NUMBER:
        return this.#numberByte(c, i);
      case LITERAL:
        if (c !== this.#literal[this.#literalPos]) this.#fail('invalid literal', i);
        if (++this.#literalPos === this.#literal.length) this.#valueEnded(i + 1);
        return i + 1;
    }
    if (isJsonWhitespace(c)) return i + 1;
    switch (this.#state) {
      case VALUE:
        return this.#startValue(c, i);
      case FIRST_ELEMENT:
        return c === 0x5d ? this.#close(ARRAY, i) : this.#startValue(c, i);
      case FIRST_KEY:
        if (c === 0x7d) return this.#close(OBJECT, i);
        return this.#startKey(c, i);
      case KEY:
        return this.#startKey(c, i);
      case COLON:
        if (c !== 0x3a) this.#fail("expected ':'", i);
        this.#state = VALUE;
        return i + 1;
      case AFTER_VALUE:
        if (c === 0x2c) {
          this.#state = this.#stack[this.#depth - 1] === OBJECT ? KEY : VALUE;
          return i + 1;
        }
        if (c === 0x7d) return this.#close(OBJECT, i);
        if (c === 0x5d) return this.#close(ARRAY, i);
        return this.#fail("expected ',' or a closing bracket", i);
      default:
        return this.#fail('unexpected data after the JSON value', i);
    }
  }

  #startValue(c: number, i: number): number {
    if (this.#depth === 0 && c !== 0x7b && (c === 0x5b || c === 0x22 || c === 0x2d || isDigit(c) || LITERALS.has(c))) {
      throw new BodyRewriteError('not_an_object', 'The body must be a JSON object.');
    }
    if (this.#wantedKey !== undefined) {
      this.#openMember(this.#wantedKey, i, c);
      this.#wantedKey = undefined;
    }
    if (c === 0x22) {
      this.#state = STRING;
      this.#stringIsKey = false;
    } else if (c === 0x7b || c === 0x5b) {
      this.#push(c === 0x7b ? OBJECT : ARRAY);
      this.#state = c === 0x7b ? FIRST_KEY : FIRST_ELEMENT;
    } else if (c === 0x2d || isDigit(c)) {
      this.#state = NUMBER;
      this.#number = c === 0x2d ? MINUS : c === 0x30 ? ZERO : INT;
    } else {
      const literal = LITERALS.get(c);
      if (literal === undefined) this.#fail('expected a JSON value', i);
      this.#state = LITERAL;
      this.#literal = literal;
      this.#literalPos = 1;
    }
    return i + 1;
  }

  #push(kind: number): void {
    if (this.#depth === this.#stack.length) {
      const grown = new Uint8Array(this.#stack.length * 2);
      grown.set(this.#stack);
      this.#stack = grown;
    }
    this.#stack[this.#depth++] = kind;
  }

  #openMember(key: string, i: number, first: number): void {
    if (this.#members.length === this.#maxMembers) {
      throw new BodyRewriteError('too_many_members', `more than ${this.#maxMembers} of the members the gateway reads ("${key}" at byte ${this.#base + i})`);
    }
    this.#memberDepth = this.#depth;
    if (this.#memberDepth === 1) {
      const earlier = this.#lastOf.get(key);
      if (earlier !== undefined) this.#members[earlier] = { ...this.#members[earlier]!, raw: undefined };
      this.#lastOf.set(key, this.#members.length);
    }
    this.#member = { key, start: this.#base + i, first };
    this.#startCapture(i, this.#wanted.get(key)!);
  }

  #startKey(c: number, i: number): number {
    if (c !== 0x22) this.#fail('expected a string key', i);
    this.#state = STRING;
    this.#stringIsKey = true;
    if (this.#depth === 1 || this.#nesting() !== undefined) this.#startCapture(i, this.#maxKeyBytes);
    return i + 1;
  }

  // What joins the parent to a key directly inside its object, {"parent": {here}}, or inside an
  // object element of its array, {"list": [{here}]}; undefined anywhere else.
  #nesting(): '.' | '[].' | undefined {
    if (this.#parent === undefined) return undefined;
    const s = this.#stack;
    if (this.#depth === 2 && s[1] === OBJECT) return '.';
    if (this.#depth === 3 && s[1] === ARRAY && s[2] === OBJECT) return '[].';
    return undefined;
  }

  #startCapture(i: number, limit: number): void {
    this.#capture = [];
    this.#captureBytes = 0;
    this.#captureLimit = limit;
    this.#captureFrom = i;
  }

  #string(chunk: Buffer, i: number): number {
    // Tight loop: long base64 strings are most of the bytes in large bodies.
    for (; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 0x22) {
        this.#closeString(i);
        return i + 1;
      }
      if (c === 0x5c) {
        this.#state = ESCAPE;
        return i + 1;
      }
      if (c < 0x20) this.#fail('control character in string', i);
    }
    return i;
  }

  #closeString(i: number): void {
    if (!this.#stringIsKey) {
      this.#valueEnded(i + 1);
      return;
    }
    this.#state = COLON;
    const topLevel = this.#depth === 1;
    const nesting = topLevel ? undefined : this.#nesting();
    if (!topLevel && nesting === undefined) return;
    const raw = this.#takeCapture(i + 1);
    if (topLevel) this.#parent = undefined;
    if (raw === undefined) return;
    // Escapes were validated byte by byte, so parsing cannot throw.
    const key = raw.includes(0x5c) ? (JSON.parse(raw.toString('utf8')) as string) : raw.toString('utf8', 1, raw.length - 1);
    const wanted = topLevel ? key : `${this.#parent}${nesting}${key}`;
    if (this.#wanted.has(wanted)) this.#wantedKey = wanted;
    else if (topLevel && this.#parents.has(key)) this.#parent = key;
    else if (topLevel && this.#caseVariant === undefined && this.#isCaseVariant(key)) this.#caseVariant = key;
  }

  #captureSegment(segment: Buffer): void {
    this.#captureBytes += segment.length;
    // Past the limit the segments are let go at once: they pin whole chunks.
    if (this.#captureBytes <= this.#captureLimit) this.#capture?.push(segment);
    else this.#capture?.splice(0);
  }

  // The captured bytes up to chunk[end], or undefined when they overflowed the limit.
  #takeCapture(end: number): Buffer | undefined {
    if (this.#capture === undefined) return undefined;
    this.#captureSegment(this.#chunk.subarray(this.#captureFrom, end));
    const segments = this.#capture;
    this.#capture = undefined;
    return this.#captureBytes <= this.#captureLimit ? Buffer.concat(segments) : undefined;
  }

  #numberByte(c: number, i: number): number {
    const digit = isDigit(c);
    switch (this.#number) {
      case MINUS:
        if (!digit) this.#fail('invalid number', i);
        this.#number = c === 0x30 ? ZERO : INT;
        return i + 1;
      case ZERO:
      case INT:
        if (digit && this.#number === INT) return i + 1;
        if (c === 0x2e) this.#number = DOT;
        else if (c === 0x65 || c === 0x45) this.#number = E;
        else return this.#endNumber(i);
        return i + 1;
      case DOT:
        if (!digit) this.#fail('invalid number', i);
        this.#number = FRAC;
        return i + 1;
      case FRAC:
        if (digit) return i + 1;
        if (c !== 0x65 && c !== 0x45) return this.#endNumber(i);
        this.#number = E;
        return i + 1;
      case E:
        if (c === 0x2b || c === 0x2d) this.#number = SIGN;
        else if (digit) this.#number = EXP;
        else this.#fail('invalid number', i);
        return i + 1;
      case SIGN:
        if (!digit) this.#fail('invalid number', i);
        this.#number = EXP;
        return i + 1;
      default:
        return digit ? i + 1 : this.#endNumber(i);
    }
  }

  // A number ends at the first byte that cannot extend it; that byte is read again.
  #endNumber(i: number): number {
    if (this.#number === MINUS || this.#number === DOT || this.#number === E || this.#number === SIGN) {
      this.#fail('invalid number', i);
    }
    this.#valueEnded(i);
    return i;
  }

  #close(kind: number, i: number): number {
    if (this.#depth === 0 || this.#stack[--this.#depth] !== kind) this.#fail('mismatched closing bracket', i);
    if (this.#depth === 0) this.#closeAt = this.#base + i;
    this.#valueEnded(i + 1);
    return i + 1;
  }

  #valueEnded(next: number): void {
    if (this.#member !== undefined && this.#depth === this.#memberDepth) {
      const member = this.#member;
      this.#member = undefined;
      this.#members.push({ ...member, end: this.#base + next, raw: this.#takeCapture(next) });
    }
    this.#state = this.#depth > 0 ? AFTER_VALUE : DONE;
  }

  #fail(message: string, i: number): never {
    throw new BodyRewriteError('invalid_json', `${message} at byte ${this.#base + i}`);
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}
