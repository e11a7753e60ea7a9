/**
 * Error codes a record whose answer had begun ends with when the client, not the upstream or
 * the gateway, ended it: it left (`client_closed`) or stopped reading (`client_stalled`).
 */
export const CLIENT_ENDED_CODES: readonly string[] = ['client_closed', 'client_stalled'];

/**
 * What every error figure counts (usage and statistics `errors`, `error_rate`, the
 * `status_class=error` filter): a status of 400 or more, or an answer that began (a status
 * below 400) and then failed, which the record says with its error code: a stream ended by
 * the gateway's error event or by the upstream's own. An answer the client ended is none.
 */
export function isErrorRecord(status: number, errorCode: string | null): boolean {
  return status >= 400 || (errorCode !== null && !CLIENT_ENDED_CODES.includes(errorCode));
}
