/**
 * How far an upstream request had been written when it failed, as the exchange saw it (undici
 * starts a request, `onRequestStart`, on a connected socket right before writing it; a streamed
 * body is all handed to the socket once undici has read it to its end). A failure before the
 * start proves the upstream saw nothing, whatever its code; one before the body's end, that the
 * upstream never had the whole request. Errors that did not come through an exchange (a
 * WebSocket handshake, discovery) are not known here.
 */
/** In the order a request gets through them. */
const PROGRESS = ['unwritten', 'partly', 'whole'] as const;
type Progress = (typeof PROGRESS)[number];

interface Written {
  progress: Progress;
  /** Milliseconds from the start of the request's writing to the error, when it was written. */
  failedAfterMs: number | undefined;
}

const written = new WeakMap<object, Written>();

/**
 * Records how far a request got when `error` ended it (`wholly`: its body too, by default
 * whenever it was written) and, for one written, how long after its writing started;
 * one error shared by several requests keeps the furthest any got.
 */
export function noteRequestWritten(error: unknown, wasWritten: boolean, wholly = wasWritten, failedAfterMs?: number): void {
  if (typeof error !== 'object' || error === null) return;
  const reached: Progress = !wasWritten ? 'unwritten' : wholly ? 'whole' : 'partly';
  const known = written.get(error);
  if (known === undefined || PROGRESS.indexOf(reached) > PROGRESS.indexOf(known.progress)) written.set(error, { progress: reached, failedAfterMs });
}

/** How far the request had been written, as the exchange said; undefined when it is not known. */
export function requestProgress(error: unknown): Progress | undefined {
  return typeof error === 'object' && error !== null ? written.get(error)?.progress : undefined;
}

/** Milliseconds from the start of the request's writing to `error`; undefined when not known or not written. */
export function failedAfterWritingMs(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? written.get(error)?.failedAfterMs : undefined;
}

/** True or false when the exchange said so, undefined when it is not known. */
export function requestWritten(error: unknown): boolean | undefined {
  const reached = requestProgress(error);
  return reached === undefined ? undefined : reached !== 'unwritten';
}
