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

const progress = new WeakMap<object, Progress>();

/**
 * Records how far a request got when `error` ended it (`wholly`: its body too, by default
 * whenever it was written); one error shared by several requests keeps the furthest any got.
 */
export function noteRequestWritten(error: unknown, wasWritten: boolean, wholly = wasWritten): void {
  if (typeof error !== 'object' || error === null) return;
  const reached: Progress = !wasWritten ? 'unwritten' : wholly ? 'whole' : 'partly';
  const known = progress.get(error);
  if (known === undefined || PROGRESS.indexOf(reached) > PROGRESS.indexOf(known)) progress.set(error, reached);
}

/** How far the request had been written, as the exchange said; undefined when it is not known. */
export function requestProgress(error: unknown): Progress | undefined {
  return typeof error === 'object' && error !== null ? progress.get(error) : undefined;
}

/** True or false when the exchange said so, undefined when it is not known. */
export function requestWritten(error: unknown): boolean | undefined {
  const reached = requestProgress(error);
  return reached === undefined ? undefined : reached !== 'unwritten';
}
