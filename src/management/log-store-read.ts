import { ApiError, validationFailed } from '../http/api-error.ts';
import { InvalidLogCursorError, type LogReader } from '../store/log-store.ts';

/**
 * The request-log store as the management routes read it: a failing read (a full disk, a dead
 * writer) is answered 503 LOG_STORE_UNAVAILABLE, not 500, since the gateway is fine and its log
 * store is not; a cursor the store did not hand out is the caller's mistake, 400, which a retry
 * would not mend. Wrapped once, so that no route that reads it can miss it.
 */
export function logReadsAnswered(logs: LogReader): LogReader {
  return {
    get: (requestId) => answered(logs.get(requestId)),
    list: (filter, page) => answered(logs.list(filter, page)),
    usage: (query) => answered(logs.usage(query)),
    statistics: (query) => answered(logs.statistics(query)),
    keyUsage: (accessKeyId, from, to) => answered(logs.keyUsage(accessKeyId, from, to)),
  };
}

/** A read of the log store made elsewhere (the quota meter's), answered as the routes' own are. */
export async function answered<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof InvalidLogCursorError) throw validationFailed('cursor', 'invalid_value');
    throw new ApiError('LOG_STORE_UNAVAILABLE', { cause: error });
  }
}
