import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, readIncrementally, seedGroup, sseBlocks, sseData, withTimeout } from './helpers/dataplane-scenarios.ts';

// The upstream timeouts come from the settings (request_timeout_seconds,
// stream_idle_timeout_seconds), read on each request: a PUT of the settings applies to the
// next request of the running server, as `serve` mounts it (no data-plane options).

/** Generous bound on each wait: far above the 1 s settings, far below the 120 s and 300 s defaults. */
const BOUND_MS = 30_000;

interface Style {
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  /** The first event of the upstream's stream (carries `first-event`). */
  first: string;
  /** The error body of a refused request, in the protocol's shape. */
  errorBody: (code: string) => unknown;
  /** The data of the error event that ends a stream, in the protocol's shape. */
  errorEvent: (code: string) => unknown;
}

const STYLES: Style[] = [
  {
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    body: { model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    first: `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'first-event' } }] })}\n\n`,
    errorBody: (code) => ({ error: { code, type: String, message: String } }),
    errorEvent: (code) => ({ error: { code, type: String, message: String } }),
  },
  {
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    first: `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 0 } }, marker: 'first-event' })}\n\n`,
    errorBody: (code) => ({ type: 'error', error: { type: 'timeout_error', message: String, details: { error_code: code } } }),
    errorEvent: (code) => ({ type: 'error', error: { type: 'timeout_error', message: String, code } }),
  },
];

/** The real server with the data plane mounted as `serve` does, a Group of the style's channel on `upstreamUrl`, and a key. */
async function gatewayWithRoute(t: Test, style: Style, upstreamUrl: string): Promise<{ gw: Gateway; keyValue: string }> {
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  await seedGroup(gw.server.store, { channel: style.channel, baseUrl: upstreamUrl, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.server.store, { protocols: [style.protocol] });
  return { gw, keyValue };
}

function send(gw: Gateway, style: Style, keyValue: string): Promise<Response> {
  return fetch(`${gw.url}${style.path}`, {
    method: 'POST',
    headers: { ...clientAuthHeaders(style.protocol, keyValue), 'content-type': 'application/json' },
    body: JSON.stringify(style.body),
  });
}

async function putSettings(t: Test, gw: Gateway, body: Record<string, unknown>): Promise<void> {
  const saved = await gw.api('PUT', '/api/settings', { body });
  t.equal(saved.status, 200, 'settings saved');
}


for (const style of STYLES) {
  t.test(`${style.protocol}: request_timeout_seconds bounds the wait for the upstream's headers: 504 upstream_timeout in the protocol's error shape`, async (t) => {
    const silent = await startUpstream(() => undefined);
    t.teardown(() => silent.close());
    const { gw, keyValue } = await gatewayWithRoute(t, style, silent.url);
    await putSettings(t, gw, { request_timeout_seconds: 1 });
    const res = await withTimeout(send(gw, style, keyValue), BOUND_MS, 'the gateway to give up on the silent upstream');
    t.equal(res.status, 504);
    t.match(await res.json(), style.errorBody('upstream_timeout'));
  });

  t.test(`${style.protocol}: stream_idle_timeout_seconds ends a stalled stream with the protocol's error event`, async (t) => {
    const upstream = await startUpstream((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(style.first); // then nothing more
    });
    t.teardown(() => upstream.close());
    const { gw, keyValue } = await gatewayWithRoute(t, style, upstream.url);
    await putSettings(t, gw, { stream_idle_timeout_seconds: 1 });
    const res = await send(gw, style, keyValue);
    t.equal(res.status, 200);
    const blocks = sseBlocks(await withTimeout(readIncrementally(res), BOUND_MS, 'the stalled stream to be ended'));
    t.match(blocks[0], /first-event/, 'what came before the stall arrived');
    t.equal(blocks.length, 2, 'then exactly one more event: the error', { blocks });
    t.match(sseData(blocks.at(-1) ?? ''), style.errorEvent('upstream_idle_timeout'));
  });
}
