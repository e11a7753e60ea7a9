import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import { seedRoute, startUpstreamAndDataPlane, type Gateway, type Upstream } from '../dataplane/helpers/data-plane-harness.ts';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { logOf } from './helpers/vendor-wire.ts';

// The gateway's own 5xx for a request the upstream took and did not answer (an overdue answer,
// a stream that stalls or breaks before its first byte) is not failed over, as sending the
// prompt again would bill it again; the openai and anthropic SDKs (two retries by default)
// must not send it again either: the answer says `x-should-retry: false`, which they obey.

/** Far above the SDKs' backoff for two retries; only bounds a hung test. */
const BOUND_MS = 20_000;

const CHAT = { model: 'team-chat', messages: [{ role: 'user' as const, content: 'hi' }] };
const MESSAGE = { model: 'team-msg', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };

async function gateway(t: Test, respond: (res: ServerResponse) => void, options: { headersTimeoutMs?: number; streamIdleTimeoutMs?: number }) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => respond(res), options);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'v-chat' }], protocols: ['x-completions', 'x-messages'] });
  await seedRoute(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'team-msg', upstream: 'v-msg' }], protocols: ['x-messages'] });
  return {
    upstream,
    gw,
    // Default retries: what a client gets unless it opts out.
    openai: new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1` }),
    anthropic: new Anthropic({ apiKey: keyValue, baseURL: gw.url }),
  };
}

/**
 * The openai SDK gave up at once on the gateway's `status` `code`: raised it, the answer saying
 * not to retry, one upstream request; the record as `record` says too.
 */
async function openaiRaisedOnce(t: Test, call: Promise<unknown>, upstream: Upstream, gw: Gateway, status: number, code: string, record: Record<string, unknown> = {}) {
  const err = await withTimeout(call.catch((e: unknown) => e), BOUND_MS, 'the SDK to give up');
  t.type(err, OpenAI.InternalServerError);
  const error = err as InstanceType<typeof OpenAI.InternalServerError>;
  t.equal(error.status, status);
  t.equal(error.code, code);
  t.equal(error.headers.get('x-should-retry'), 'false');
  t.equal(upstream.requests.length, 1, 'the request reached the upstream once');
  t.match(await logOf(gw, error.requestID), { status, error_code: code, ...record });
}

/** The anthropic SDK gave up at once on the gateway's `status`: raised it, the answer saying not to retry, one upstream request. */
async function anthropicRaisedOnce(t: Test, call: Promise<unknown>, upstream: Upstream, status: number) {
  const err = await withTimeout(call.catch((e: unknown) => e), BOUND_MS, 'the SDK to give up');
  t.type(err, AnthropicAPIError);
  t.equal((err as AnthropicAPIError).status, status);
  t.equal((err as AnthropicAPIError).headers?.get('x-should-retry'), 'false');
  t.equal(upstream.requests.length, 1, 'the request reached the upstream once');
}

/** The upstream takes the request and never answers. */
const silent = (): void => undefined;

t.test('an overdue answer: the openai SDK raises 504 upstream_timeout after one upstream request', async (t) => {
  const { upstream, gw, openai } = await gateway(t, silent, { headersTimeoutMs: 250 });
  await openaiRaisedOnce(t, openai.chat.completions.create(CHAT), upstream, gw, 504, 'upstream_timeout');
});

t.test('an overdue answer: the anthropic SDK raises 504 upstream_timeout after one upstream request', async (t) => {
  const { upstream, anthropic } = await gateway(t, silent, { headersTimeoutMs: 250 });
  await anthropicRaisedOnce(t, anthropic.messages.create(MESSAGE), upstream, 504);
});

for (const failure of [
  { what: 'stalls', status: 504, code: 'upstream_idle_timeout', then: () => {} },
  { what: 'breaks', status: 502, code: 'upstream_stream_broken', then: (res: ServerResponse) => res.socket?.destroy() },
]) {
  const respond = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    failure.then(res);
  };

  t.test(`completions stream that ${failure.what} before its first byte: the openai SDK raises ${failure.status} ${failure.code} after one upstream request`, async (t) => {
    const { upstream, gw, openai } = await gateway(t, respond, { streamIdleTimeoutMs: 300 });
    await openaiRaisedOnce(t, openai.chat.completions.create({ ...CHAT, stream: true }), upstream, gw, failure.status, failure.code);
  });

  t.test(`messages stream that ${failure.what} before its first byte: the anthropic SDK raises ${failure.status} after one upstream request`, async (t) => {
    const { upstream, anthropic } = await gateway(t, respond, { streamIdleTimeoutMs: 300 });
    await anthropicRaisedOnce(t, anthropic.messages.create({ ...MESSAGE, stream: true }), upstream, failure.status);
  });
}

// An operation that is not safe to replay (an image, an embedding: docs/data-plane.md Failover)
// is not sent to another credential once an upstream may have run it; nor is it for the SDK to
// send again: a connection lost after the request went out (the upstream crashed at work, a load
// balancer cut a long image generation) may have left an image generated and billed.
for (const op of [
  { name: 'images.generate', protocol: 'x-images', call: (openai: OpenAI) => openai.images.generate({ model: 'team-op', prompt: 'a lighthouse' }) },
  { name: 'embeddings.create', protocol: 'x-chat-embeddings', call: (openai: OpenAI) => openai.embeddings.create({ model: 'team-op', input: 'hi' }) },
]) {
  t.test(`${op.name}: a connection lost after the request went out: the openai SDK raises 502 upstream_unreachable after one upstream request`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.socket?.destroy());
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'team-op', upstream: 'v-op' }], protocols: [op.protocol], upstreamKeys: ['sk-a', 'sk-b', 'sk-c'] });
    const openai = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1` });
    await openaiRaisedOnce(t, op.call(openai), upstream, gw, 502, 'upstream_unreachable', { attempts: [{ error_code: 'upstream_connection_lost' }] });
  });
}
