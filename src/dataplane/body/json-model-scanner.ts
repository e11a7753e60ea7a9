import { BodyRewriteError } from './body-rewrite-error.ts';
import type { BodyScanner, ScanOutcome } from './model-rewrite.ts';

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

// As in the strict parser; it also bounds the stack while the unbuffered tail is scanned.
const MAX_DEPTH = 128;
// "model" written entirely in \u escapes takes 30 bytes; a longer raw key cannot be it.
const MAX_MODEL_KEY_BYTES = 30;
const SIMPLE_ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));
const LITERALS = new Map(['true', 'false', 'null'].map((word) => [word.charCodeAt(0), Buffer.from(word)]));

/**
 * Byte-level JSON validator that finds the top-level "model" string member. It checks every
 * byte it sees (structure, escapes, numbers, literals), so a body that goes wrong after the
 * model is rejected while it streams, and a second top-level "model" key is an error.
 */
export class JsonModelScanner implements BodyScanner {
  #state = VALUE;
  readonly #stack: number[] = [];
  #base = 0; // absolute offset of the current chunk
  #number = MINUS;
  #literal = Buffer.alloc(0);
  #literalPos = 0;
  #hexLeft = 0;
  #stringIsKey = false;
  #stringStart = 0;
  // Raw bytes of the string being read when it is a top-level key or the model value.
  #capture: Buffer[] | undefined;
  #captureBytes = 0;
  #captureLimit = 0;
  #captureFrom = 0;
  #nextIsModel = false;
  #modelKeySeen = false;
  #outcome: ScanOutcome | undefined;

  get outcome(): ScanOutcome | undefined {
    return this.#outcome;
  }

  push(chunk: Buffer): void {
    this.#captureFrom = 0;
    let i = 0;
    while (i < chunk.length) i = this.#step(chunk, i);
    if (this.#capture !== undefined) this.#captureSegment(chunk.subarray(this.#captureFrom));
    this.#base += chunk.length;
  }

  end(): ScanOutcome {
    if (this.#state === NUMBER) this.#endNumber(0);
    if (this.#state !== DONE || this.#outcome === undefined) this.#fail('the body ends inside the JSON value', 0);
    return this.#outcome;
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
    if (isWhitespace(c)) return i + 1;
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
          this.#state = this.#stack.at(-1) === OBJECT ? KEY : VALUE;
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
    const isModel = this.#nextIsModel;
    this.#nextIsModel = false;
    if (isModel && c !== 0x22) this.#fail('the top-level "model" member must be a string', i);
    if (c === 0x22) {
      this.#openString(i, false, isModel ? Infinity : undefined);
    } else if (c === 0x7b || c === 0x5b) {
      if (this.#stack.length === MAX_DEPTH) this.#fail('JSON nested too deeply', i);
      this.#stack.push(c === 0x7b ? OBJECT : ARRAY);
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

  #startKey(c: number, i: number): number {
    if (c !== 0x22) this.#fail('expected a string key', i);
    this.#openString(i, true, this.#stack.length === 1 ? MAX_MODEL_KEY_BYTES : undefined);
    return i + 1;
  }

  #openString(i: number, isKey: boolean, captureLimit: number | undefined): void {
    this.#state = STRING;
    this.#stringIsKey = isKey;
    this.#stringStart = this.#base + i;
    if (captureLimit === undefined) return;
    this.#capture = [];
    this.#captureBytes = 0;
    this.#captureLimit = captureLimit;
    this.#captureFrom = i + 1;
  }

  #string(chunk: Buffer, i: number): number {
    // Tight loop: long base64 strings are most of the bytes in large bodies.
    for (; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 0x22) {
        this.#closeString(chunk, i);
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

  #closeString(chunk: Buffer, i: number): void {
    const captured = this.#takeCapture(chunk.subarray(this.#captureFrom, i));
    if (!this.#stringIsKey) {
      if (captured !== undefined) {
        const end = this.#base + i + 1;
        this.#outcome = { model: { value: this.#decode(captured, i), start: this.#stringStart, end }, at: end };
      }
      this.#valueEnded(i + 1);
      return;
    }
    this.#state = COLON;
    if (captured === undefined || this.#decode(captured, i) !== 'model') return;
    if (this.#modelKeySeen) this.#fail('duplicate top-level "model" member', i);
    this.#modelKeySeen = true;
    this.#nextIsModel = true;
  }

  #captureSegment(segment: Buffer): void {
    this.#captureBytes += segment.length;
    if (this.#captureBytes <= this.#captureLimit) this.#capture?.push(segment);
  }

  // The captured raw string, or undefined when nothing was captured or it overflowed.
  #takeCapture(last: Buffer): Buffer | undefined {
    if (this.#capture === undefined) return undefined;
    this.#captureSegment(last);
    const segments = this.#capture;
    this.#capture = undefined;
    return this.#captureBytes <= this.#captureLimit ? Buffer.concat(segments) : undefined;
  }

  #decode(raw: Buffer, i: number): string {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      return this.#fail('invalid UTF-8 in string', i);
    }
    // Escapes and control characters were validated byte by byte, so this cannot throw.
    return JSON.parse(`"${text}"`) as string;
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
    if (this.#stack.pop() !== kind) this.#fail('mismatched closing bracket', i);
    this.#valueEnded(i + 1);
    return i + 1;
  }

  #valueEnded(next: number): void {
    if (this.#stack.length > 0) {
      this.#state = AFTER_VALUE;
      return;
    }
    this.#state = DONE;
    this.#outcome ??= { model: undefined, at: this.#base + next };
  }

  #fail(message: string, i: number): never {
    throw new BodyRewriteError('invalid_json', `${message} at byte ${this.#base + i}`);
  }
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}
