import { sseEventData, upstreamStreamErrors, type StreamErrorStyle, type UpstreamStreamErrorRow } from '../../streaming/index.ts';
import { parseOrUndefined } from './id-of.ts';
import { QuotedNameSearch } from './quoted-name-search.ts';

const COLON = 58;

/**
 * Finds a stream style's own error events (the upstreamStreamErrors row of the style). An
 * event is decoded and parsed only where a raw name stands quoted where its row places it
 * (a member name before a colon, a `type` value after one): a stream without an error costs
 * one indexOf per raw name and read. A quote inside a JSON string is escaped, so text that
 * merely says "error" never matches.
 */
export class UpstreamErrorDetector {
  readonly #row: UpstreamStreamErrorRow;
  readonly #marks: QuotedNameSearch[];

  constructor(row: UpstreamStreamErrorRow) {
    this.#row = row;
    this.#marks = row.raw.map((name) => new QuotedNameSearch(name));
  }

  /** The style's detector: one per style, shared by every stream (it keeps no state of one). */
  static of(style: StreamErrorStyle): UpstreamErrorDetector | undefined {
    return DETECTORS.get(style);
  }

  /** Where in `bytes`, from `from`, the first raw name standing in its place is; -1 when none. */
  candidateIn(bytes: Buffer, from = 0): number {
    let first = -1;
    for (const mark of this.#marks) {
      for (let at = mark.indexIn(bytes, from); at !== -1 && (first === -1 || at < first); at = mark.indexIn(bytes, at + 1)) {
        if (this.#standsInPlace(bytes, at, mark.length)) {
          first = at;
          break;
        }
      }
    }
    return first;
  }

  /** Whether an SSE event's text is an error event. */
  isErrorEvent(text: string): boolean {
    const data = sseEventData(text);
    return data !== undefined && this.isErrorData(data);
  }

  /** Whether one event's (or element's) JSON is an error. */
  isErrorData(json: string): boolean {
    const value = parseOrUndefined(json);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const v = value as Record<string, unknown>;
    if (this.#row.in === 'type') return typeof v.type === 'string' && this.#row.raw.includes(v.type);
    return this.#row.raw.some((name) => v[name] !== undefined && v[name] !== null);
  }

  /** A member name is followed by its colon; a `type` value follows one (a byte outside `bytes` is undefined: neither). */
  #standsInPlace(bytes: Buffer, at: number, length: number): boolean {
    if (this.#row.in === 'member') {
      let i = at + length;
      while (isSpace(bytes[i])) i++;
      return bytes[i] === COLON;
    }
    let i = at - 1;
    while (isSpace(bytes[i])) i--;
    return bytes[i] === COLON;
  }
}

function isSpace(c: number | undefined): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

/** Built once: a detector per stream would allocate its marks for every streamed request. */
const DETECTORS: ReadonlyMap<StreamErrorStyle, UpstreamErrorDetector> = new Map(upstreamStreamErrors.map((row) => [row.style, new UpstreamErrorDetector(row)]));
