import { SseParser, type StreamErrorStyle } from '../../streaming/index.ts';
import { parseOrUndefined } from './id-of.ts';

/**
 * What marks the event each protocol ends a finished stream with: its data as a whole, or its
 * type (the `event` field, else the data's `type`). Generate's SSE has none. `owed`: a stream
 * that ends without it was cut short; not completions', whose `[DONE]` some compatible
 * upstreams omit.
 */
const FINAL_EVENTS: Readonly<Record<StreamErrorStyle, { data?: string; types?: readonly string[]; owed?: boolean }>> = {
  completions: { data: '[DONE]' },
  responses: { types: ['response.completed', 'response.failed', 'response.incomplete'], owed: true },
  messages: { types: ['message_stop'], owed: true },
  generate: {},
};

/** Whether a `style` stream that ends without its final event is incomplete, however cleanly it ended. */
export function owesFinalEvent(style: StreamErrorStyle): boolean {
  return FINAL_EVENTS[style].owed === true;
}

/** Whether the last event of `bytes` (whole SSE events) is the one `style` ends a finished stream with. */
export function endsWithFinalEvent(style: StreamErrorStyle, bytes: Buffer): boolean {
  const final = FINAL_EVENTS[style];
  if (final.data === undefined && final.types === undefined) return false;
  const last = carriedEvents(bytes).at(-1);
  if (last === undefined) return false;
  if (final.data !== undefined && last.data === final.data) return true;
  const type = last.event ?? typeOf(last.data);
  return type !== undefined && final.types !== undefined && final.types.includes(type);
}

/**
 * Whether passed-on bytes carry an event beyond comments: a keep-alive comment (`: ping`) an
 * upstream sends after its final event must not hide that event. Only bytes that begin with a
 * comment are parsed.
 */
export function carriesEvent(bytes: Buffer): boolean {
  return bytes[0] !== 0x3a /* ':' */ || carriedEvents(bytes).length > 0;
}

/** The events of whole SSE bytes that have a field besides comments. */
function carriedEvents(bytes: Buffer) {
  const parser = new SseParser();
  return [...parser.push(bytes), ...parser.end()].filter((e) => e.data !== undefined || e.event !== undefined);
}

function typeOf(data: string | undefined): string | undefined {
  const parsed = data === undefined ? undefined : parseOrUndefined(data);
  const type = typeof parsed === 'object' && parsed !== null ? (parsed as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : undefined;
}
