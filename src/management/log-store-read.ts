import { ApiError } from '../http/api-error.ts';

/**
 * A read of the request-log store, whose failure (a full disk, a dead writer) is answered 503
 * LOG_STORE_UNAVAILABLE, not 500: the gateway is fine, its log store is not.
 */
export async function logStoreRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw new ApiError('LOG_STORE_UNAVAILABLE', { cause: error });
  }
}
