/**
 * The spool file a request body is written to or read from failed (a full disk, a file removed
 * under the gateway): the gateway's failure, neither the client's nor the upstream's.
 */
export class SpoolFailure extends Error {
  constructor(cause: Error | string) {
    super(`the spooled request body failed: ${typeof cause === 'string' ? cause : cause.message}`, typeof cause === 'string' ? undefined : { cause });
    this.name = 'SpoolFailure';
  }
}

/**
 * Reports a spool failure to the operator and returns it: the client is answered
 * spool_unavailable without the details, which name the gateway's disk.
 */
export function warnSpoolFailure(error: SpoolFailure): SpoolFailure {
  process.emitWarning(`switchyard: ${error.message}`);
  return error;
}
