import { emptyUsage, type TokenUsage } from './token-usage.ts';
import { pathSegments, readSegments } from './read-path.ts';
import { addCounters, compileFields, readFieldCounters } from './map-raw-usage.ts';
import { sessionUsageSources, type SessionUsageStyle } from './usage-fields-sessions.ts';

const TYPE = ['type'];

/** A source with its paths split, made once per style. */
function compile(style: SessionUsageStyle) {
  const source = sessionUsageSources[style];
  return { ...source, path: pathSegments(source.usagePath), fields: compileFields(source.fields) };
}

type CompiledSource = ReturnType<typeof compile>;

const compiled: Readonly<Record<SessionUsageStyle, CompiledSource>> = { transcription: compile('transcription'), live: compile('live') };

/**
 * Adds up a WebSocket session's usage from the upstream's JSON frames (text, or binary as
 * Gemini Live sends them). A frame is parsed only
 * when its bytes contain the style's hint, so audio and other frames cost one substring search.
 */
export class SessionUsageAccumulator {
  readonly #source: CompiledSource;
  #usage: TokenUsage | undefined;

  constructor(style: SessionUsageStyle) {
    this.#source = compiled[style];
  }

  /** Feeds one JSON frame from the upstream; true when it carried usage. */
  push(frame: Buffer): boolean {
    const source = this.#source;
    if (!frame.includes(source.frameHint)) return false;
    let message: unknown;
    try {
      message = JSON.parse(frame.toString('utf8'));
    } catch {
      return false;
    }
    if (source.eventType !== undefined && readSegments(message, TYPE) !== source.eventType) return false;
    const usageObject = readSegments(message, source.path);
    if (usageObject === null || typeof usageObject !== 'object') return false;
    addCounters((this.#usage ??= emptyUsage()), source.fields, readFieldCounters(source.fields, usageObject));
    return true;
  }

  /** The session's usage so far; undefined when no message carried any. */
  result(): TokenUsage | undefined {
    return this.#usage === undefined ? undefined : { ...this.#usage };
  }
}
