import { ApiError, validationFailed } from '../http/api-error.ts';
import { InvalidLogCursorError } from '../store/log-store.ts';

/**
 * A read of the request-log store, whose failure (a full disk, a dead writer) is answered 503
 * LOG_STORE_UNAVAILABLE, not 500: the gateway is fine, its log store is not. A cursor the
 * store did not hand out is the caller's mistake: 400, which a retry would not mend.
 */
export async function logStoreRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof InvalidLogCursorError) throw validationFailed('cursor', 'invalid_value');
    throw new ApiError('LOG_STORE_UNAVAILABLE', { cause: error });
  }
}
