import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { startUpstreamAndDataPlane, type DataPlaneHarnessOptions } from './data-plane-harness.ts';
import { createKey, seedGroup } from './dataplane-scenarios.ts';

/** A streamed request of one protocol: the channel that serves it natively, its path and body, and where its AccessKey goes. */
export interface StreamStyle {
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  headers: (key: string) => Record<string, string>;
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
const GENERATE_BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

/** One streamed request per protocol style, for a Group serving `team-m`; Google's stream both as SSE and as a JSON array. */
export const STREAM_STYLES: Record<string, StreamStyle> = {
  completions: { protocol: 'x-completions', channel: 'ch02', path: '/v1/chat/completions', body: { model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] }, headers: bearer },
  responses: { protocol: 'x-responses', channel: 'ch09', path: '/v1/responses', body: { model: 'team-m', stream: true, input: 'hi' }, headers: bearer },
  messages: { protocol: 'x-messages', channel: 'ch14', path: '/v1/messages', body: { model: 'team-m', stream: true, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] }, headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }) },
  'generate alt=sse': { protocol: 'x-generate', channel: 'ch15', path: '/v1beta/models/team-m:streamGenerateContent?alt=sse', body: GENERATE_BODY, headers: (key) => ({ 'x-goog-api-key': key }) },
  'generate array': { protocol: 'x-generate', channel: 'ch15', path: '/v1beta/models/team-m:streamGenerateContent', body: GENERATE_BODY, headers: (key) => ({ 'x-goog-api-key': key }) },
};

export interface StreamScenarioOptions {
  /** What the upstream does after its pieces: ends the answer unless told otherwise (`() => undefined` stalls it). */
  end?: (res: ServerResponse) => void;
  /** The Group's upstream secret. */
  secret?: string;
  gateway?: DataPlaneHarnessOptions;
}

/**
 * A Group serving `team-m` in `style`'s channel whose upstream answers 200 with `headers`,
 * writing `pieces` in separate reads, then `end`; `send` makes the style's request (its body,
 * or the one given) with an AccessKey of the style's protocol.
 */
export async function streamScenario(t: Test, style: StreamStyle, headers: OutgoingHttpHeaders, pieces: string[], { end = (res) => res.end(), secret = 'sk-up', gateway = {} }: StreamScenarioOptions = {}) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    async (_req, res) => {
      res.writeHead(200, headers);
      for (const piece of pieces) {
        res.write(piece);
        // Apart in time, so that the gateway reads them apart.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      end(res);
    },
    gateway,
  );
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: [secret] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const send = (body: Record<string, unknown> = style.body) => fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...style.headers(keyValue), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { gw, upstream, send, keyValue };
}
