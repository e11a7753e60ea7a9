const QUOTE = 34;
const COMMA = 44;
const OPEN_BRACKET = 91;
const BACKSLASH = 92;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

/** Where a streamed array stands, for text appended to it to keep it valid. */
type JsonArrayBoundary = 'before_open' | 'inside_element' | 'after_separator' | 'after_element' | 'closed';

/**
 * Splits a streamed top-level JSON array (generate-style streams without `alt=sse`) into the
 * text of its elements as each one completes, and says where in each chunk the array could be
 * cut and still be closed validly. It reads bytes: every byte it looks for is ASCII, which no
 * byte of a multi-byte UTF-8 sequence is. It tracks only nesting and strings; elements are not
 * validated, that is left to whoever parses them. An element longer than `maxElementBytes` is
 * skipped rather than held, so an upstream that never ends an element cannot make the gateway
 * hold its bytes without bound.
 */
export class JsonArrayStreamSplitter {
  readonly #maxElementBytes: number;
  /** The current element passed the limit: it is not kept, and not returned. */
  #skipping = false;
  #opened = false;
  #closed = false;
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** The current element's bytes so far (views of the chunks pushed). */
  #element: Buffer[] = [];
  #elementBytes = 0;
  #cut = -1;
  /** The last cut followed an element's closing bracket (else the `[` or a comma). */
  #cutAfterElement = false;

  constructor(maxElementBytes: number) {
    this.#maxElementBytes = maxElementBytes;
  }

  push(chunk: Uint8Array | string): string[] {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    return this.#scan(bytes);
  }

  /**
   * In the chunk pushed last: where the last place ends that the array can be cut at and be
   * closed validly (after its `[`, a comma between elements, an element's closing bracket, or
   * its `]`; after `]`, the whole chunk); -1 when there is none in it.
   */
  get cut(): number {
    return this.#cut;
  }

  /** Where the array stands at the last cut: what may be appended to what was cut there. */
  boundaryAtCut(): Exclude<JsonArrayBoundary, 'inside_element'> {
    if (!this.#opened) return 'before_open';
    if (this.#closed) return 'closed';
    return this.#cutAfterElement ? 'after_element' : 'after_separator';
  }

  #scan(chunk: Buffer): string[] {
    const elements: string[] = [];
    const n = chunk.length;
    let start = 0;
    this.#cut = -1;
    for (let i = 0; i < n; i++) {
      if (this.#closed) {
        this.#cut = n;
        break;
      }
      const c = chunk[i];
      if (!this.#opened) {
        if (c === OPEN_BRACKET) {
          this.#opened = true;
          start = i + 1;
          this.#cut = i + 1;
        }
        continue;
      }
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === BACKSLASH) this.#escaped = true;
        else if (c === QUOTE) this.#inString = false;
        continue;
      }
      if (c === QUOTE) {
        this.#inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.#depth++;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (this.#depth === 0) {
          // The array's own closing bracket.
          this.#take(chunk, start, i, elements);
          this.#closed = true;
          this.#cut = i + 1;
        } else if (--this.#depth === 0) {
          this.#cut = i + 1;
          this.#cutAfterElement = true;
        }
      } else if (c === COMMA && this.#depth === 0) {
        this.#take(chunk, start, i, elements);
        start = i + 1;
        this.#cut = i + 1;
        this.#cutAfterElement = false;
      }
    }
    if (this.#opened && !this.#closed && !this.#skipping && start < n) {
      this.#element.push(chunk.subarray(start));
      this.#elementBytes += n - start;
      if (this.#elementBytes > this.#maxElementBytes) {
        this.#skipping = true;
        this.#element = [];
        this.#elementBytes = 0;
      }
    }
    return elements;
  }

  /**
   * The element held whole when the stream stops short of its next comma or `]` (a stall, a
   * break): it is complete, only its end was not seen. Undefined when none is held whole.
   */
  takeWhole(): string | undefined {
    if (this.boundary() !== 'after_element' || this.#skipping) return undefined;
    return this.#takeElement();
  }

  /** The element takeWhole would take, left held (its bytes may go on before its comma or `]`). */
  peekWhole(): string | undefined {
    if (this.boundary() !== 'after_element' || this.#skipping) return undefined;
    return this.#elementText();
  }

  /**
   * Where the stream stands, so that text can be appended that keeps the array valid:
   * before its `[`, inside an element, right after `[` or a comma, or after a whole element.
   */
  boundary(): JsonArrayBoundary {
    if (!this.#opened) return 'before_open';
    if (this.#closed) return 'closed';
    if (this.#inString || this.#depth > 0) return 'inside_element';
    return this.#skipping || this.#element.some((piece) => piece.toString('latin1').trim() !== '') ? 'after_element' : 'after_separator';
  }

  #take(chunk: Buffer, start: number, end: number, elements: string[]): void {
    if (this.#skipping) {
      this.#skipping = false;
      this.#element = [];
      this.#elementBytes = 0;
      return;
    }
    if (start < end) this.#element.push(chunk.subarray(start, end));
    const element = this.#takeElement();
    if (element.length > 0) elements.push(element);
  }

  #takeElement(): string {
    const text = this.#elementText();
    this.#element = [];
    this.#elementBytes = 0;
    return text;
  }

  /** The held element's text, without the whitespace around it. */
  #elementText(): string {
    const pieces = this.#element;
    if (pieces.length === 0) return '';
    return (pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces)).toString('utf8').trim();
  }
}
