import type { ServerResponse } from 'node:http';
import type { Test } from 'tap';
import type { LogRecord } from '../../../src/store/logs/index.ts';
import { startUpstreamAndDataPlane, type Gateway, type RecordedUpstreamRequest, type Upstream } from './data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './dataplane-scenarios.ts';

/** SSE bytes of completions chunks, `[DONE]` last. */
export const completionsSse = (chunks: unknown[]): string => `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`;

/**
 * A `channel` Group serving `model` (same name upstream) with one credential of `secret`, in front
 * of an upstream answering with `respond`, and a key for x-completions; `post` sends a chat
 * completion body and returns its status, text and log record. Both stop when `t` ends.
 */
export async function startChatRoute(t: Test, o: { channel: string; model: string; secret: string; respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void }): Promise<{ upstream: Upstream; gw: Gateway; post: (body: string) => Promise<{ status: number; text: string; record: LogRecord }> }> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, o.respond);
  await seedGroup(gw.store, { channel: o.channel, baseUrl: upstream.url, models: [{ external: o.model, upstream: o.model }], secrets: [o.secret] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const post = async (body: string) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
    const text = await res.text();
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    return { status: res.status, text, record };
  };
  return { upstream, gw, post };
}
