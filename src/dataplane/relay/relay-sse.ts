import { SseEventSplitter, sseEventData, streamErrorEvent } from '../../streaming/index.ts';
import { isUsageOnlyChunk } from '../../usage/index.ts';
import { carriesEvent, endsWithFinalEvent, holdsFieldLine, holdsWholeDataEvent, opensFinalEvent, owesFinalEvent } from './final-stream-event.ts';
import { idOf, parseOrUndefined } from './id-of.ts';
import { streamFailureOf } from './stream-failure-of.ts';
import { MAX_HELD_EVENT_BYTES, StreamRelay } from './stream-relay.ts';

const USAGE = Buffer.from('usage');
const CR = 0x0d;
const LF = 0x0a;
const BLANK_LINE = Buffer.from('\n\n');
const DATA_FIELD = Buffer.from('data: ');
const RESPONSE_CREATED_TEXT = '"response.created"';
const RESPONSE_CREATED = Buffer.from(RESPONSE_CREATED_TEXT);
const SEQUENCE_MARK = Buffer.from('"sequence_number"');
/** A completions chunk that ends a choice: its `finish_reason` a string, not null. */
const FINISHED_CHOICE = /"finish_reason"\s*:\s*"/;
/** A responses stream event's `sequence_number` (no nested object of these events has one). */
const SEQUENCE_NUMBER = /"sequence_number"\s*:\s*(\d+)/;

/**
 * SSE passed on event by event as bytes: each chunk's complete events in one write, exactly as
 * received. Only events that can carry usage (or the created response's id), or be the
 * upstream's own error event, are decoded and parsed. Half an event is never written (an event too large to hold excepted, which a break
 * then ends with the connection), so an error event after a break stands on its own.
 */
export class SseRelay extends StreamRelay {
  readonly #splitter = new SseEventSplitter();
  /** responses style: the last event that carried a sequence number, for the error event's. */
  #lastSequenced: Buffer | undefined;
  /** Part of an event too large to hold was passed on; its rest comes as the next event. */
  #passingLargeEvent = false;
  /** What the last read passed on: looked into only when the stream fails, for its final event. */
  #lastPassed: Buffer | undefined;
  /** The event too large to hold being passed on is the style's final event, as its start says. */
  #largeEventFinal = false;
  /** The last piece of such a final event: its type is not in it, but completed() knows it by this. */
  #largeFinalEnd: Buffer | undefined;
  /** The last read ended with an event dropped at its closing CR: an LF starting the next completes it. */
  #droppedBeforeLf = false;
  /** A last block the upstream ended without its blank line, held until the stream's end is judged. */
  #rest: Buffer | undefined;

  onData(chunk: Buffer): void {
    this.idle.touch();
    const block = this.#passingLargeEvent ? undefined : this.#splitter.pushBlock(chunk);
    if (block !== undefined) return this.#forwardBlock(block);
    const events = this.#splitter.push(chunk);
    if (this.#passingLargeEvent && events.length > 0) {
      this.#passingLargeEvent = false;
      const end = events.shift()!;
      if (this.#largeEventFinal) this.#largeFinalEnd = end;
      this.#passOn(end);
    }
    if (events.length > 0) this.#forward(events);
    if (this.#splitter.pendingBytes > MAX_HELD_EVENT_BYTES) {
      const piece = this.#splitter.takePending();
      // Only the first piece holds the event's start, which names its type.
      if (!this.#passingLargeEvent) this.#largeEventFinal = opensFinalEvent(this.relay.options.streamEnd, piece);
      this.#passingLargeEvent = true;
      this.#passOn(piece);
    }
  }

  // A last block sent without its blank line is held until the end is judged (completed() reads
  // it): it goes on, ended, after a whole stream (readHeld), and is dropped before an error event.
  protected endCleanly(): void {
    const rest = this.#splitter.end();
    if (rest === undefined) return;
    if (this.#passingLargeEvent) return this.#passOn(rest);
    // The upstream's own error event ends the stream as the upstream's, not as a break.
    if (this.#isUpstreamError(rest)) this.upstreamErrorSeen();
    this.#rest = rest;
  }

  // A field line left unfinished is a cut event: half an event in any style, a whole one where a
  // final event is owed (completions and generate may end with any event). Else not
  // completions': some compatible upstreams omit its `[DONE]`. Nor a resumed stream's until an
  // event passed (one resumed at or past its end sends none). An event too large to hold that
  // the end leaves unfinished is cut in every style: its start went on, its blank line never came.
  protected owesEnd(): boolean {
    if (this.#passingLargeEvent) return true;
    const { options } = this.relay;
    const owed = owesFinalEvent(options.streamEnd);
    if (this.#rest !== undefined && holdsFieldLine(this.#rest) && (owed || !holdsWholeDataEvent(this.#rest))) return true;
    return owed && (options.firstSequence === undefined || this.#lastPassed !== undefined);
  }

  // The held rest goes on once no error event is to follow, with the line ends it lacks: the SDKs
  // drop a last event that no blank line ends (the final event, the upstream's error event, or
  // a completions or generate stream's last whole event).
  protected override readHeld(): void {
    const rest = this.#rest;
    this.#rest = undefined;
    if (rest !== undefined) this.#forward([Buffer.concat([rest, blankLineAfter(rest)])]);
  }

  protected writeFailure(code: string): void {
    // A rest still held is dropped, as a break drops it: the error event stands on its own. The
    // tokens of a usage it holds whole were billed all the same.
    const rest = this.#rest;
    this.#rest = undefined;
    if (rest !== undefined && this.#mayCarry(rest)) this.#inspect(rest.toString('utf8'));
    // Before its first byte, the stream is answered with the gateway's HTTP error instead.
    if (this.relay.answerFailure(code)) return;
    // Nothing valid can follow half an event.
    if (this.#passingLargeEvent) return void this.relay.res.destroy();
    this.relay.write(streamErrorEvent(this.relay.options.streamStyle, streamFailureOf(code), { sequenceNumber: this.#nextSequence() }));
  }

  // completions: the last event passed on ended a choice and no usage came yet. The upstream
  // sends its usage chunk right after the finish (the one it was asked for); the other styles
  // report usage with their closing events, which nothing before them announces.
  override awaitsOnlyUsage(): boolean {
    const last = this.#lastPassed;
    return this.relay.options.streamStyle === 'completions' && this.usage?.result() === undefined && last !== undefined && FINISHED_CHOICE.test(last.toString('latin1'));
  }

  protected override completed(): boolean {
    const style = this.relay.options.streamEnd;
    if (this.#rest !== undefined && carriesEvent(style, this.#rest)) return endsWithFinalEvent(style, this.#rest);
    const last = this.#lastPassed;
    return !this.#passingLargeEvent && last !== undefined && (last === this.#largeFinalEnd || endsWithFinalEvent(style, last));
  }

  /** Whether an event is the upstream's own error event (once one was seen, none is looked for). */
  #isUpstreamError(event: Buffer): boolean {
    const errors = this.upstreamErrors;
    return errors !== undefined && errors.candidateIn(event) !== -1 && errors.isErrorEvent(event.toString('utf8'));
  }

  /** Where among `events` the upstream's own error event is; -1 when none is (or one was seen before). */
  #upstreamErrorAmong(events: Buffer[]): number {
    if (this.upstreamErrors === undefined) return -1;
    for (let i = 0; i < events.length; i++) if (this.#isUpstreamError(events[i]!)) return i;
    return -1;
  }

  /** Events that may hold the upstream's own error event: those before it go as they are, it and those after it masked (upstreamErrorSeen). */
  #forward(events: Buffer[]): void {
    const at = this.#upstreamErrorAmong(events);
    if (at === -1) return this.#forwardEvents(events);
    if (at > 0) this.#forwardEvents(events.slice(0, at));
    this.upstreamErrorSeen();
    this.#forwardEvents(at > 0 ? events.slice(at) : events);
  }

  #forwardEvents(events: Buffer[]): void {
    const { options } = this.relay;
    let kept: Buffer[] | undefined;
    let dropped = false;
    // The splitter hands that LF over as a piece of its own: it goes with the event it ends.
    if (this.#droppedBeforeLf && isLoneLf(events[0]!)) kept = [];
    for (let i = kept === undefined ? 0 : 1; i < events.length; i++) {
      const event = events[i]!;
      if (options.streamStyle === 'responses' && event.includes(SEQUENCE_MARK)) this.#lastSequenced = event;
      dropped = this.#mayCarry(event) && !this.#inspect(event.toString('utf8'));
      if (dropped) kept ??= events.slice(0, i);
      else kept?.push(event);
    }
    this.#droppedBeforeLf = dropped && events[events.length - 1]!.at(-1) === CR;
    const out = kept ?? events;
    if (out.length === 0 || !this.relay.clientOpen) return;
    const bytes = out.length === 1 ? out[0]! : joined(out);
    // Not the lone LF of a CRLF split between reads: the event it ends is the one to look at.
    if (bytes.length > 1) this.#passed(bytes);
    this.relay.write(bytes);
  }

  /** A block (see #forwardBlockEvents) that may hold the upstream's own error event: the events before it go as they are, it and those after it masked (upstreamErrorSeen). */
  #forwardBlock(block: Buffer): void {
    const at = this.upstreamErrors === undefined ? -1 : this.#upstreamErrorIn(block);
    if (at === -1) return this.#forwardBlockEvents(block);
    // The block's parts are whole events: each is a block of its own.
    if (at > 0) this.#forwardBlockEvents(block.subarray(0, at));
    this.upstreamErrorSeen();
    this.#forwardBlockEvents(at > 0 ? block.subarray(at) : block);
  }

  /**
   * Whole events with LF line ends (pushBlock's), most chunks of a stream: only the events a
   * marker is found in are cut out and inspected; the rest goes on as the block's own bytes.
   */
  #forwardBlockEvents(block: Buffer): void {
    const { options, outcome } = this.relay;
    if (options.streamStyle === 'responses') {
      const at = block.lastIndexOf(SEQUENCE_MARK);
      if (at !== -1) this.#lastSequenced = block.subarray(eventStart(block, at), eventEnd(block, at));
    }
    // The [start, end) ranges of the block to pass on, when an event is dropped.
    let kept: number[] | undefined;
    let from = 0;
    for (let at = from; ; ) {
      const usage = this.usage === undefined ? -1 : block.indexOf(USAGE, at);
      const created = options.captureResponseId && outcome.responseId === undefined ? block.indexOf(RESPONSE_CREATED, at) : -1;
      const found = usage === -1 ? created : created === -1 ? usage : Math.min(usage, created);
      if (found === -1) break;
      const start = eventStart(block, found);
      at = eventEnd(block, found);
      if (this.#inspectAt(block, start, at)) continue;
      (kept ??= []).push(from, start);
      from = at;
    }
    if (!this.relay.clientOpen) return;
    if (kept === undefined) {
      this.#passed(block);
      return this.relay.write(block);
    }
    kept.push(from, block.length);
    // Its bytes are about to move: a view kept of them gets its own copy.
    if (this.#lastSequenced !== undefined && this.#lastSequenced.buffer === block.buffer) this.#lastSequenced = Buffer.from(this.#lastSequenced);
    const out = keepRanges(block, kept);
    if (out.length === 0) return;
    this.#passed(out);
    this.relay.write(out);
  }

  /** Where in the block the upstream's own error event starts, looking only into the events a raw name stands in; -1 when none is. */
  #upstreamErrorIn(block: Buffer): number {
    const errors = this.upstreamErrors!;
    let at = errors.candidateIn(block);
    while (at !== -1) {
      const start = eventStart(block, at);
      const end = eventEnd(block, at);
      if (errors.isErrorEvent(block.toString('utf8', start, end))) return start;
      at = errors.candidateIn(block, end);
    }
    return -1;
  }

  /** Passes on part of an event too large to hold: an event's bytes, kept for completed() unparsed (they may start mid-line). */
  #passOn(bytes: Buffer): void {
    if (!this.relay.clientOpen) return;
    this.#lastPassed = bytes;
    this.relay.write(bytes);
  }

  /** Remembers what went to the client, for completed(); blocks without data (keep-alive comments, a lone `retry`) are not an event, nor (see carriesEvent) an appended `[DONE]`. */
  #passed(bytes: Buffer): void {
    if (carriesEvent(this.relay.options.streamEnd, bytes)) this.#lastPassed = bytes;
  }

  /** Whether an event's bytes may hold usage or the created response's id (checked before decoding it). */
  #mayCarry(event: Buffer): boolean {
    const { options, outcome } = this.relay;
    return (this.usage !== undefined && event.includes(USAGE)) || (options.captureResponseId && outcome.responseId === undefined && event.includes(RESPONSE_CREATED));
  }

  /**
   * #inspect for the event at `block[start, end)`: read from its bytes when it is one `data`
   * line and no response id is wanted from it, which spares decoding and parsing it.
   */
  #inspectAt(block: Buffer, start: number, end: number): boolean {
    const { options, outcome } = this.relay;
    const wantsId = options.captureResponseId && outcome.responseId === undefined;
    if (!wantsId && this.usage !== undefined && isDataLine(block, start)) {
      const scanned = this.usage.pushBytes(block, start + DATA_FIELD.length, end - 2);
      if (scanned !== undefined) return !(options.dropUsageChunk && scanned.usageOnlyChunk);
    }
    return this.#inspect(block.toString('utf8', start, end));
  }

  /** Reads usage and ids from an event's text; false when the event is to be dropped. */
  #inspect(text: string): boolean {
    const { options, outcome } = this.relay;
    const data = sseEventData(text);
    if (data === undefined) return true;
    const wantsId = options.captureResponseId && outcome.responseId === undefined && text.includes(RESPONSE_CREATED_TEXT);
    const parsed = this.usage?.push(data) ?? (wantsId ? parseOrUndefined(data) : undefined);
    if (wantsId) {
      outcome.responseId = idOf(parsed);
      if (outcome.responseId !== undefined) options.onResponseId?.(outcome.responseId);
    }
    return !(options.dropUsageChunk && parsed !== undefined && isUsageOnlyChunk(parsed));
  }

  #nextSequence(): number {
    const seq = this.#lastSequenced === undefined ? null : SEQUENCE_NUMBER.exec(this.#lastSequenced.toString('utf8'));
    return seq ? Number(seq[1]) + 1 : (this.relay.options.firstSequence ?? 0);
  }
}

const CR_END = Buffer.from('\r');
const LF_END = Buffer.from('\n');
const CRLF_END = Buffer.from('\r\n');

/** The line ends that end the last line of `rest` and then the event, in its own line end style. */
function blankLineAfter(rest: Buffer): Buffer {
  const last = rest[rest.length - 1];
  if (last === CR) return CR_END;
  if (last === LF) return rest[rest.length - 2] === CR ? CRLF_END : LF_END;
  return BLANK_LINE;
}

function isLoneLf(piece: Buffer): boolean {
  return piece.length === 1 && piece[0] === LF;
}

/** Whether the event at `start` begins with a `data: ` field (pushBlock's events end with LF LF). */
function isDataLine(block: Buffer, start: number): boolean {
  for (let i = 0; i < DATA_FIELD.length; i++) if (block[start + i] !== DATA_FIELD[i]) return false;
  return true;
}

/**
 * The bytes of `ranges` ([start, end) pairs, in order) of a block, moved to its front: the
 * block is the relay's own once received (it already holds it past onData, queued for the
 * write), and moving bytes within it costs no new buffer. Only its own range is touched.
 */
function keepRanges(block: Buffer, ranges: readonly number[]): Buffer {
  let size = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    const start = ranges[i]!;
    const end = ranges[i + 1]!;
    if (start !== size) block.copyWithin(size, start, end);
    size += end - start;
  }
  return block.subarray(0, size);
}

/** Where the event holding byte `at` of a pushBlock block starts. */
function eventStart(block: Buffer, at: number): number {
  const previous = block.lastIndexOf(BLANK_LINE, at);
  return previous === -1 ? 0 : previous + 2;
}

/** Where the event holding byte `at` of a pushBlock block ends (a block ends with an event end). */
function eventEnd(block: Buffer, at: number): number {
  return block.indexOf(BLANK_LINE, at) + 2;
}

/** Events side by side in one chunk are written as one view of it; others are copied together. */
function joined(events: Buffer[]): Buffer {
  const first = events[0]!;
  let end = first.byteOffset + first.length;
  for (let i = 1; i < events.length; i++) {
    const e = events[i]!;
    if (e.buffer !== first.buffer || e.byteOffset !== end) return Buffer.concat(events);
    end += e.length;
  }
  return Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset);
}
