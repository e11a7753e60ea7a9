/**
 * Splits a streamed top-level JSON array (generate-style streams without `alt=sse`) into the
 * text of its elements as each one completes. It tracks only nesting and strings; elements
 * are not validated, that is left to whoever parses them.
 */
export class JsonArrayStreamSplitter {
  readonly #decoder = new TextDecoder('utf-8');
  #opened = false;
  #closed = false;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #element = '';

  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#scan(text);
  }

  /** Ends the stream; an unterminated last element is returned when non-empty. */
  end(): string[] {
    const elements = this.#scan(this.#decoder.decode());
    const rest = this.#element.trim();
    this.#element = '';
    if (rest.length > 0) elements.push(rest);
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
    if (this.#opened && !this.#closed) this.#element += text.slice(start);
    return elements;
  }

  /**
   * Where the stream stands, so that text can be appended that keeps the array valid:
   * before its `[`, inside an element, right after `[` or a comma, or after a whole element.
   */
  boundary(): 'before_open' | 'inside_element' | 'after_separator' | 'after_element' | 'closed' {
    if (!this.#opened) return 'before_open';
    if (this.#closed) return 'closed';
    if (this.#inString || this.#depth > 0) return 'inside_element';
    return this.#element.trim() === '' ? 'after_separator' : 'after_element';
  }

  #take(tail: string, elements: string[]): void {
    const element = (this.#element + tail).trim();
    this.#element = '';
    if (element.length > 0) elements.push(element);
  }
}
