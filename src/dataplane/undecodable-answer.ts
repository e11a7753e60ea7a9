import type { AttemptRecord } from '../store/logs/index.ts';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * An error answer whose body the gateway cannot decode to mask (decode-reply-body.ts throws
 * `upstream_unreachable`): the attempt's failure, its upstream status kept. Anything else
 * thrown is not that, and goes on.
 */
export function undecodableAnswer(err: unknown, attempt: AttemptRecord): DataPlaneError {
  if (!(err instanceof DataPlaneError)) throw err;
  attempt.error_code = err.code;
  return err;
}

/** What `mask()` makes of an error answer, or its undecodableAnswer when it cannot decode the body. */
export function maskedOrUndecodable<T>(attempt: AttemptRecord, mask: () => T): T | DataPlaneError {
  try {
    return mask();
  } catch (err) {
    return undecodableAnswer(err, attempt);
  }
}
