import { SseParser, sseEventData, withoutBom, type StreamErrorStyle } from '../../streaming/index.ts';
import type { OperationId } from '../../generated/index.ts';
import { parseOrUndefined } from './id-of.ts';

const DONE = '[DONE]';
const DONE_BYTES = Buffer.from(DONE);
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');
const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;

/**
 * How a stream's end is judged: by its protocol's error style, but for the operations whose
 * streams end with an event of their own while their error events keep the completions shape
 * (OPERATION_END_STYLES).
 */
export type StreamEndStyle = StreamErrorStyle | 'images' | 'transcriptions' | 'speech';

/**
 * What marks the event each protocol ends a finished stream with: its data as a whole, or its
 * type (the `event` field, else the data's `type`). Generate's SSE has none. `owed`: a stream
 * that ends without it was cut short; not completions', whose `[DONE]` some compatible
 * upstreams omit. An image stream's completed event carries the final image and the usage
 * (OpenAI's ImageGenStreamEvent, ImageEditStreamEvent); a `[DONE]` after it is not looked at.
 * A transcription's done event carries the whole text and the usage (OpenAI's
 * `transcript.text.done`, Mistral's `transcription.done`), speech's `speech.audio.done` the
 * usage (OpenAI's and Mistral's); compatible servers that stream these as completions chunks
 * end them with `[DONE]`, which ends them too.
 */
const FINAL_EVENTS: Readonly<Record<StreamEndStyle, { data?: string; types?: readonly string[]; owed?: boolean }>> = {
  completions: { data: DONE },
  responses: { types: ['response.completed', 'response.failed', 'response.incomplete'], owed: true },
  messages: { types: ['message_stop'], owed: true },
  generate: {},
  images: { types: ['image_generation.completed', 'image_edit.completed'], owed: true },
  transcriptions: { data: DONE, types: ['transcript.text.done', 'transcription.done'], owed: true },
  speech: { data: DONE, types: ['speech.audio.done'], owed: true },
};

/** The operations whose streams end otherwise than their protocol's error style says. FIM's are completions chunks. */
const OPERATION_END_STYLES: Readonly<Partial<Record<OperationId, StreamEndStyle>>> = {
  'images-generations': 'images',
  'images-edits': 'images',
  'audio-transcriptions': 'transcriptions',
  'audio-speech': 'speech',
};

/** The end style of an operation's streams whose error style is `style`. */
export function streamEndStyle(operation: string, style: StreamErrorStyle): StreamEndStyle {
  return OPERATION_END_STYLES[operation as OperationId] ?? style;
}

/** Whether a `style` stream that ends without its final event is incomplete, however cleanly it ended. */
export function owesFinalEvent(style: StreamEndStyle): boolean {
  return FINAL_EVENTS[style].owed === true;
}

/**
 * Whether SSE bytes hold a field line, not only comments and line ends: a last block that
 * holds one and ends without its blank line is an event cut short (a `: ping` is not).
 */
export function holdsFieldLine(bytes: Buffer): boolean {
  return withoutBom(bytes.toString('utf8'))
    .split(/\r\n|\r|\n/)
    .some((line) => line.length > 0 && !line.startsWith(':'));
}

/**
 * Whether a last block ended without its blank line is a whole event all the same: its last
 * field line a `data` line, its data a JSON object or array (which no more bytes could have
 * continued). Half an event's data does not parse.
 */
export function holdsWholeDataEvent(bytes: Buffer): boolean {
  const text = withoutBom(bytes.toString('utf8'));
  const fields = text.split(/\r\n|\r|\n/).filter((line) => line.length > 0 && !line.startsWith(':'));
  if (fields.at(-1)?.startsWith('data:') !== true) return false;
  const data = sseEventData(text);
  const parsed = data === undefined ? undefined : parseOrUndefined(data);
  return typeof parsed === 'object' && parsed !== null;
}

/**
 * Whether the last event of `bytes` (whole SSE events) is the one `style` ends a finished
 * stream with. A `data: [DONE]` that some compatible upstreams append after another
 * protocol's final event is not looked at, as a comment is not.
 */
export function endsWithFinalEvent(style: StreamEndStyle, bytes: Buffer): boolean {
  const final = FINAL_EVENTS[style];
  if (final.data === undefined && final.types === undefined) return false;
  const last = carriedEvents(style, bytes).at(-1);
  if (last === undefined) return false;
  if (final.data !== undefined && last.data === final.data) return true;
  const type = last.event ?? typeOf(last.data);
  return type !== undefined && final.types !== undefined && final.types.includes(type);
}

/** How much of an event too large to hold is read for its type: its field lines and the start of its data. */
const OPENING_BYTES = 4096;
/** A data value whose JSON object begins with its `type` (the protocols' own events do). */
const LEADING_TYPE = /^\s*\{\s*"type"\s*:\s*"([^"\\]*)"/;

/**
 * endsWithFinalEvent for an event too large to hold, passed on in pieces, of which `bytes` are
 * the first: its type read from its start, the `event` field before its data, else the data's
 * leading `"type"`. A final event known by its whole data (`[DONE]`) is never that large.
 */
export function opensFinalEvent(style: StreamEndStyle, bytes: Buffer): boolean {
  const { types } = FINAL_EVENTS[style];
  if (types === undefined) return false;
  let event: string | undefined;
  // The last line may be cut off: only one that a data line follows is taken for whole.
  for (const line of bytes.toString('utf8', 0, Math.min(bytes.length, OPENING_BYTES)).split(/\r\n|\r|\n/)) {
    if (line.startsWith('data:')) {
      const type = event ?? LEADING_TYPE.exec(line.slice(DATA.length))?.[1];
      return type !== undefined && types.includes(type);
    }
    if (line.startsWith('event:')) event = line.slice(line.charCodeAt(EVENT.length) === SPACE ? EVENT.length + 1 : EVENT.length);
  }
  return false;
}

/**
 * Whether passed-on bytes carry an event: a block with a `data` field (blocks of comments,
 * `retry`, `id` or `event` alone dispatch nothing), and, but in completions, not `[DONE]`. A
 * keep-alive (`: ping`), a lone `retry: 3000`, or a `data: [DONE]` appended after the final
 * event must not hide that event. Bytes that begin (past the line ends of a CRLF split between
 * reads) with a `data` line, or an `event` line and then one, are taken as they are; only
 * others are parsed.
 */
export function carriesEvent(style: StreamEndStyle, bytes: Buffer): boolean {
  let at = 0;
  while (bytes[at] === CR || bytes[at] === LF) at++;
  // Line ends alone (the blank line of an event passed before, in a read of its own) carry none.
  if (at === bytes.length) return false;
  if (startsWith(bytes, at, EVENT)) at = nextLine(bytes, at);
  if (at !== -1 && startsWith(bytes, at, DATA) && (FINAL_EVENTS[style].data === DONE || !startsWithDone(bytes, at))) return true;
  return carriedEvents(style, bytes).length > 0;
}

/** The events of whole SSE bytes that have a `data` field, `[DONE]` left out but in completions. */
function carriedEvents(style: StreamEndStyle, bytes: Buffer) {
  const parser = new SseParser();
  const doneIsEvent = FINAL_EVENTS[style].data === DONE;
  return [...parser.push(bytes), ...parser.end()].filter((e) => e.data !== undefined && (doneIsEvent || e.data !== DONE));
}

/** Whether `bytes` hold `prefix` at `at`. */
function startsWith(bytes: Buffer, at: number, prefix: Buffer): boolean {
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

/** Where the line after the one at `at` starts; -1 when the bytes end first. */
function nextLine(bytes: Buffer, at: number): number {
  let end = at;
  while (end < bytes.length && bytes[end] !== CR && bytes[end] !== LF) end++;
  if (bytes[end] === CR && bytes[end + 1] === LF) end++;
  return end + 1 < bytes.length ? end + 1 : -1;
}

/** Whether `bytes` hold a `data: [DONE]` line (the space optional) at `at`. */
function startsWithDone(bytes: Buffer, at: number): boolean {
  if (!startsWith(bytes, at, DATA)) return false;
  const value = bytes[at + DATA.length] === SPACE ? at + DATA.length + 1 : at + DATA.length;
  return bytes.subarray(value, value + DONE_BYTES.length).equals(DONE_BYTES);
}

function typeOf(data: string | undefined): string | undefined {
  const parsed = data === undefined ? undefined : parseOrUndefined(data);
  const type = typeof parsed === 'object' && parsed !== null ? (parsed as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : undefined;
}
