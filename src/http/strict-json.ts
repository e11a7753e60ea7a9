// A complete RFC 8259 parser, written out because JSON.parse silently keeps the last of
// duplicated keys and cannot tell us where a problem is.

export type JsonProblem = 'malformed' | 'duplicate_field' | 'trailing_value' | 'too_deep';

export class StrictJsonError extends Error {
  readonly problem: JsonProblem;
  readonly position: number;
  readonly field: string | undefined;

  constructor(problem: JsonProblem, position: number, field?: string) {
    super(`${problem} at ${position}${field === undefined ? '' : ` (${field})`}`);
    this.name = 'StrictJsonError';
    this.problem = problem;
    this.position = position;
    this.field = field;
  }
}

const MAX_DEPTH = 128;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

export function parseStrictJson(text: string): unknown {
  const parser = new Parser(text);
  parser.skipWhitespace();
  const value = parser.value(0, '');
  parser.skipWhitespace();
  if (parser.pos !== text.length) {
    // Anything after the first complete value, valid JSON or not, is a second value.
    throw new StrictJsonError('trailing_value', parser.pos);
  }
  return value;
}

class Parser {
  pos = 0;
  constructor(private readonly text: string) {}

  skipWhitespace(): void {
    for (;;) {
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else return;
    }
  }

  fail(problem: JsonProblem = 'malformed', field?: string): never {
    throw new StrictJsonError(problem, this.pos, field);
  }

  value(depth: number, path: string): unknown {
    if (depth > MAX_DEPTH) this.fail('too_deep');
    const c = this.text[this.pos];
    switch (c) {
      case '{':
        return this.object(depth, path);
      case '[':
        return this.array(depth, path);
      case '"':
        return this.string();
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
      default:
        return this.number();
    }
  }

  literal<T>(word: string, result: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail();
    this.pos += word.length;
    return result;
  }

  number(): number {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) this.fail();
    this.pos += m[0].length;
    // "01" or "1." is one bad number, not a number followed by a second value.
    if (/[0-9.eE+-]/.test(this.text[this.pos] ?? '')) this.fail();
    return Number(m[0]);
  }

  string(): string {
    this.pos++; // opening quote
    let out = '';
    let start = this.pos;
    for (;;) {
      const c = this.text.charCodeAt(this.pos);
      if (Number.isNaN(c)) this.fail();
      if (c === 0x22) {
        out += this.text.slice(start, this.pos);
        this.pos++;
        return out;
      }
      if (c < 0x20) this.fail();
      if (c === 0x5c) {
        out += this.text.slice(start, this.pos);
        const e = this.text[this.pos + 1];
        if (e === 'u') {
          const hex = this.text.slice(this.pos + 2, this.pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail();
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 6;
        } else {
          const mapped = e === undefined ? undefined : ESCAPES[e];
          if (mapped === undefined) this.fail();
          out += mapped;
          this.pos += 2;
        }
        start = this.pos;
        continue;
      }
      this.pos++;
    }
  }

  array(depth: number, path: string): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      out.push(this.value(depth + 1, `${path}[${out.length}]`));
      this.skipWhitespace();
      const c = this.text[this.pos];
      this.pos++;
      if (c === ']') return out;
      if (c !== ',') {
        this.pos--;
        this.fail();
      }
    }
  }

  object(depth: number, path: string): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') this.fail();
      const keyStart = this.pos;
      const key = this.string();
      const field = path === '' ? key : `${path}.${key}`;
      if (seen.has(key)) {
        this.pos = keyStart;
        this.fail('duplicate_field', field);
      }
      seen.add(key);
      this.skipWhitespace();
      if (this.text[this.pos] !== ':') this.fail();
      this.pos++;
      this.skipWhitespace();
      const v = this.value(depth + 1, field);
      // defineProperty so that a "__proto__" key stays plain data, as with JSON.parse.
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
      this.skipWhitespace();
      const c = this.text[this.pos];
      this.pos++;
      if (c === '}') return out;
      if (c !== ',') {
        this.pos--;
        this.fail();
      }
    }
  }
}
