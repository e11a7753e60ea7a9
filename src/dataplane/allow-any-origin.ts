import type { ServerResponse } from 'node:http';
import { GATEWAY_REQUEST_ID_HEADER } from './request-id-headers.ts';

/** Every origin: the data plane's answers are open to any (see allowAnyOrigin). */
export const ANY_ORIGIN = '*';

/**
 * The answer headers a browser's script may read besides the safelisted ones: the request ids
 * the SDKs report and the retry hints they obey.
 */
const EXPOSED_HEADERS = [GATEWAY_REQUEST_ID_HEADER, 'x-request-id', 'request-id', 'retry-after', 'retry-after-ms', 'x-should-retry'].join(', ');

/**
 * Opens a data-plane answer to any origin. Client keys travel in headers (or the WebSocket
 * `key` parameter), never in cookies, so a cross-origin caller holds nothing a same-origin one
 * does not. Set on the response before any answer is written, so every answer carries it:
 * the gateway's own, a model list, a forwarded or streamed upstream answer.
 */
export function allowAnyOrigin(res: ServerResponse): void {
  res.setHeader('access-control-allow-origin', ANY_ORIGIN);
  res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
}
