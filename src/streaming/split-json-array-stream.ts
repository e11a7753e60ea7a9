/** Elements longer than this are not kept (the relay passes their bytes on regardless). */
const DEFAULT_MAX_ELEMENT_CHARS = 16 * 1024 * 1024;

/**
 * Splits a streamed top-level JSON array (generate-style streams without `alt=sse`) into the
 * text of its elements as each one completes. It tracks only nesting and strings; elements
 * are not validated, that is left to whoever parses them. An element longer than
 * `maxElementChars` is skipped rather than held, so an upstream that never ends an element
 * cannot make the gateway hold its bytes without bound.
 */
export class JsonArrayStreamSplitter {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #maxElementChars: number;
  /** The current element passed the limit: it is not kept, and not returned. */
  #skipping = false;
  #opened = false;
  #closed = false;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #element = '';

  constructor(maxElementChars = DEFAULT_MAX_ELEMENT_CHARS) {
    this.#maxElementChars = maxElementChars;
  }

  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#scan(text);
  }

  /** Ends the stream; an unterminated last element is returned when non-empty. */
  end(): string[] {
    const elements = this.#scan(this.#decoder.decode());
    const rest = this.#element.trim();
    this.#element = '';
    if (rest.length > 0 && !this.#skipping) elements.push(rest);
    this.#skipping = false;
    return elements;
  }

  #scan(text: string): string[] {
    const elements: string[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.#closed) continue;
      if (!this.#opened) {
        if (c === 91 /* [ */) {
          this.#opened = true;
          start = i + 1;
        }
        continue;
      }
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === 92 /* \ */) this.#escaped = true;
        else if (c === 34 /* " */) this.#inString = false;
        continue;
      }
      if (c === 34) {
        this.#inString = true;
      } else if (c === 123 /* { */ || c === 91 /* [ */) {
        this.#depth++;
      } else if (c === 125 /* } */ || c === 93 /* ] */) {
        if (this.#depth === 0) {
          // The array's own closing bracket.
          this.#take(text.slice(start, i), elements);
          this.#closed = true;
        } else {
          this.#depth--;
        }
      } else if (c === 44 /* , */ && this.#depth === 0) {
        this.#take(text.slice(start, i), elements);
        start = i + 1;
      }
    }
    if (this.#opened && !this.#closed && !this.#skipping) {
      this.#element += text.slice(start);
      if (this.#element.length > this.#maxElementChars) {
        this.#skipping = true;
        this.#element = '';
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
    const element = this.#element.trim();
    this.#element = '';
    return element;
  }

  /**
   * Where the stream stands, so that text can be appended that keeps the array valid:
   * before its `[`, inside an element, right after `[` or a comma, or after a whole element.
   */
  boundary(): 'before_open' | 'inside_element' | 'after_separator' | 'after_element' | 'closed' {
    if (!this.#opened) return 'before_open';
    if (this.#closed) return 'closed';
    if (this.#inString || this.#depth > 0) return 'inside_element';
    return this.#skipping || this.#element.trim() !== '' ? 'after_element' : 'after_separator';
  }

  #take(tail: string, elements: string[]): void {
    if (this.#skipping) {
      this.#skipping = false;
      return;
    }
    const element = (this.#element + tail).trim();
    this.#element = '';
    if (element.length > 0) elements.push(element);
  }
}
