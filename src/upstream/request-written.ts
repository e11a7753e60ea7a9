/**
 * Whether an upstream request had started to be written when it failed, as the exchange saw it
 * (undici starts a request, `onRequestStart`, on a connected socket right before writing it).
 * A failure before that proves the upstream saw nothing, whatever its code. Errors that did not
 * come through an exchange (a WebSocket handshake, discovery) are not known here.
 */
const written = new WeakMap<object, boolean>();

/** Records how far a request got when `error` ended it; one error shared by several requests keeps "written" if any was. */
export function noteRequestWritten(error: unknown, wasWritten: boolean): void {
  if (typeof error !== 'object' || error === null || written.get(error) === true) return;
  written.set(error, wasWritten);
}

/** True or false when the exchange said so, undefined when it is not known. */
export function requestWritten(error: unknown): boolean | undefined {
  return typeof error === 'object' && error !== null ? written.get(error) : undefined;
}
