import type { ServerResponse } from 'node:http';
import { closeUnlessDrained } from '../http/drain-after-answer.ts';

/**
 * closeUnlessDrained applied to the data plane's headers object: for an answer given while the
 * request's body is still coming (a gateway refusal, an upstream's answer given before it read
 * the whole body), the rest is drained once the answer is sent, or the answer says
 * `connection: close`. Returns `headers`, so that it wraps them where they are written.
 */
export function drainIfBodyUnread<H extends Record<string, string | string[]>>(res: ServerResponse, headers: H): H {
  if (closeUnlessDrained(res)) (headers as Record<string, string | string[]>)['connection'] = 'close';
  return headers;
}
