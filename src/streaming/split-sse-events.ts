const LF = 10;
const CR = 13;
const BLANK_LINE = Buffer.from('\n\n');

/**
 * Finds where SSE events end (a blank line: LF, CR or CRLF line ends, mixed as they come) in
 * bytes as they arrive, and hands back each complete event's exact bytes. Nothing is decoded
 * or re-encoded, so passing events on costs no more than passing the chunks on; a caller
 * decodes only the events it needs to read.
 */
export class SseEventSplitter {
  /** Bytes after the last event end, from earlier chunks. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #atLineStart = true;
  /** The previous chunk ended in CR: an LF starting this one completes that line end. */
  #afterCr = false;

  /**
   * Complete events in order; the bytes of an unfinished one are kept for the next chunk. An
   * event whose closing CRLF was split between chunks comes back with its LF as a piece of
   * its own, at the start of the next push.
   */
  push(chunk: Buffer): Buffer[] {
    const events: Buffer[] = [];
    const n = chunk.length;
    let i = 0;
    let eventStart = 0;
    if (this.#afterCr && n > 0 && chunk[0] === LF) {
      i = 1;
      // The LF completes the CRLF that ended the last event: it is that event's last byte, not
      // the next one's first, and goes on its own (the next event may be dropped).
      if (this.#pending.length === 0) {
        events.push(chunk.subarray(0, 1));
        eventStart = 1;
      }
    }
    this.#afterCr = false;
    let cr = chunk.indexOf(CR, i);
    while (i < n) {
      const lf = chunk.indexOf(LF, i);
      if (cr !== -1 && cr < i) cr = chunk.indexOf(CR, i);
      if (lf === -1 && cr === -1) {
        this.#atLineStart = false;
        break;
      }
      let lineEnd: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        lineEnd = cr;
        if (cr + 1 < n) next = chunk[cr + 1] === LF ? cr + 2 : cr + 1;
        else {
          next = n;
          this.#afterCr = true;
        }
      } else {
        lineEnd = lf;
        next = lf + 1;
      }
      const emptyLine = lineEnd === i && this.#atLineStart;
      this.#atLineStart = true;
      if (emptyLine) {
        events.push(this.#take(chunk, eventStart, next));
        eventStart = next;
      }
      i = next;
    }
    if (eventStart < n) {
      this.#pending.push(eventStart === 0 ? chunk : chunk.subarray(eventStart));
      this.#pendingBytes += n - eventStart;
    }
    return events;
  }

  /**
   * The common case in one step: with nothing pending and no CR in the chunk, its complete
   * events come back as one block (event ends are then exactly the LF LF pairs) and the
   * unfinished rest is kept. Undefined when the chunk needs `push` instead; nothing is kept then.
   */
  pushBlock(chunk: Buffer): Buffer | undefined {
    if (this.#pending.length > 0 || !this.#atLineStart || this.#afterCr || chunk.indexOf(CR) !== -1) return undefined;
    const last = chunk.lastIndexOf(BLANK_LINE);
    if (last === -1) return undefined;
    const end = last + 2;
    if (end === chunk.length) return chunk;
    // The rest holds no LF LF and does not start with LF (the last pair would be later), so no event ends in it.
    const rest = chunk.subarray(end);
    this.#pending.push(rest);
    this.#pendingBytes = rest.length;
    this.#atLineStart = rest[rest.length - 1] === LF;
    return chunk.subarray(0, end);
  }

  /** Bytes of the unfinished event held so far. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /**
   * Hands over the unfinished event's bytes so far and forgets them: the next event `push`
   * returns is then only the rest of that event. For an event too large to hold whole.
   */
  takePending(): Buffer {
    const taken = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    return taken;
  }

  /** Ends the stream: the bytes of a last event sent without its blank line, if any. */
  end(): Buffer | undefined {
    const rest = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#atLineStart = true;
    this.#afterCr = false;
    if (rest.length === 0) return undefined;
    return rest.length === 1 ? rest[0] : Buffer.concat(rest);
  }

  #take(chunk: Buffer, start: number, end: number): Buffer {
    const part = start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end);
    if (this.#pending.length === 0) return part;
    const joined = Buffer.concat([...this.#pending, part]);
    this.#pending = [];
    this.#pendingBytes = 0;
    return joined;
  }
}
