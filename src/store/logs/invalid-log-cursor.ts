/**
 * A page cursor no list of this store produced: the caller's input, not a failure of the
 * store, so the management API answers it 400 rather than 503.
 */
export class InvalidLogCursorError extends Error {
  constructor() {
    super('invalid cursor');
    this.name = 'InvalidLogCursorError';
  }
}
