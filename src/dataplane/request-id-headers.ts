import type { OutgoingHeaders } from '../upstream/index.ts';

/** The header that always carries the gateway's request id (the log record's id). */
export const GATEWAY_REQUEST_ID_HEADER = 'x-switchyard-request-id';

/**
 * Adds the gateway's request id to a response. `x-request-id` carries it too unless the
 * upstream sent its own, which comes back as sent; so does `request-id` on a messages-protocol
 * answer (`messages`), the header the anthropic SDK reads.
 */
export function withRequestId(headers: OutgoingHeaders, requestId: string, messages = false): OutgoingHeaders {
  headers[GATEWAY_REQUEST_ID_HEADER] = requestId;
  if (headers['x-request-id'] === undefined) headers['x-request-id'] = requestId;
  if (messages && headers['request-id'] === undefined) headers['request-id'] = requestId;
  return headers;
}
