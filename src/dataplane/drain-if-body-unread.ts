import type { ServerResponse } from 'node:http';
import { bodyOutstanding, drainAfterAnswer } from '../http/body-outstanding.ts';

/**
 * For an answer given while the request's body is still coming (a gateway refusal, an
 * upstream's answer given before it read the whole body): the rest of the body is drained
 * once the answer is sent, within bounds, and the connection kept; a body declared far longer
 * than the drain would read gets `connection: close` instead (see drainAfterAnswer).
 * Returns `headers`, so that it wraps them where they are written.
 */
export function drainIfBodyUnread<H extends Record<string, string | string[]>>(res: ServerResponse, headers: H): H {
  if (bodyOutstanding(res.req) && !drainAfterAnswer(res)) (headers as Record<string, string | string[]>)['connection'] = 'close';
  return headers;
}
