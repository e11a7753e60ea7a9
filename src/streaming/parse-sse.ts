import type { SseEvent } from './sse-event.ts';

const NOT_FOUND = -1;

/**
 * Incremental SSE parser (WHATWG event-stream rules): bytes in, complete blocks out.
 * Chunks may split anywhere, including inside a UTF-8 sequence or between CR and LF.
 */
export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  #buffer = '';
  #raw = '';
  #event: string | undefined;
  #dataLines: string[] = [];
  #id: string | undefined;
  #retry: number | undefined;
  #comments: string[] | undefined;

  push(chunk: Uint8Array | string): SseEvent[] {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#drain(false);
  }

  /** Ends the stream. A trailing block without its blank line is still delivered. */
  end(): SseEvent[] {
    this.#buffer += this.#decoder.decode();
    const events = this.#drain(true);
    if (this.#buffer.length > 0) {
      this.#line(this.#buffer, this.#buffer);
      this.#buffer = '';
    }
    const last = this.#dispatch();
    if (last !== undefined) events.push(last);
    return events;
  }

  #drain(final: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    const buffer = this.#buffer;
    let pos = 0;
    // Cached positions keep the scan linear when a chunk holds many lines.
    let lf = buffer.indexOf('\n');
    let cr = buffer.indexOf('\r');
    for (;;) {
      if (lf !== NOT_FOUND && lf < pos) lf = buffer.indexOf('\n', pos);
      if (cr !== NOT_FOUND && cr < pos) cr = buffer.indexOf('\r', pos);
      let end: number;
      let next: number;
      if (cr !== NOT_FOUND && (lf === NOT_FOUND || cr < lf)) {
        // A CR at the very end may be the first half of a CRLF split across chunks.
        if (cr === buffer.length - 1 && !final) break;
        end = cr;
        next = buffer.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
      } else if (lf !== NOT_FOUND) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      const line = buffer.slice(pos, end);
      if (line.length === 0) {
        this.#raw += buffer.slice(pos, next);
        const event = this.#dispatch();
        if (event !== undefined) events.push(event);
      } else {
        this.#line(line, buffer.slice(pos, next));
      }
      pos = next;
    }
    this.#buffer = buffer.slice(pos);
    return events;
  }

  #line(line: string, rawLine: string): void {
    this.#raw += rawLine;
    if (line.charCodeAt(0) === 58 /* ':' */) {
      (this.#comments ??= []).push(stripOneSpace(line.slice(1)));
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === NOT_FOUND ? line : line.slice(0, colon);
    const value = colon === NOT_FOUND ? '' : stripOneSpace(line.slice(colon + 1));
    switch (field) {
      case 'data':
        this.#dataLines.push(value);
        break;
      case 'event':
        this.#event = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.#id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.#retry = Number(value);
        break;
      default:
        break;
    }
  }

  #dispatch(): SseEvent | undefined {
    const hasFields =
      this.#dataLines.length > 0 || this.#event !== undefined || this.#id !== undefined ||
      this.#retry !== undefined || this.#comments !== undefined;
    const raw = this.#raw;
    this.#raw = '';
    if (!hasFields) return undefined;
    const event: SseEvent = { raw };
    if (this.#event !== undefined) event.event = this.#event;
    if (this.#dataLines.length > 0) event.data = this.#dataLines.join('\n');
    if (this.#id !== undefined) event.id = this.#id;
    if (this.#retry !== undefined) event.retry = this.#retry;
    if (this.#comments !== undefined) event.comments = this.#comments;
    this.#event = undefined;
    this.#dataLines = [];
    this.#id = undefined;
    this.#retry = undefined;
    this.#comments = undefined;
    return event;
  }
}

function stripOneSpace(value: string): string {
  return value.charCodeAt(0) === 32 ? value.slice(1) : value;
}
