import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// Media types are case-insensitive (RFC 9110 §8.3.1): a successful answer whose content-type
// is `Text/Event-Stream` is relayed as a stream (usage read, the usage chunk the gateway asked
// for dropped, a stall ended with the error event), and one that is `Application/JSON` has
// its usage read.

const CONTENT = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hello' } }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })}\n\n`;
const DONE = 'data: [DONE]\n\n';

async function rig(t: Test, respond: (res: ServerResponse) => void): Promise<{ gw: Gateway; send: (body: Record<string, unknown>) => Promise<Response> }> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => respond(res), { streamIdleTimeoutMs: 300 });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-case-ok-00001'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const send = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [], ...body }) });
  return { gw, send };
}

t.test('a stream answered as Text/Event-Stream: usage logged, and the usage chunk the gateway asked for is not passed on', async (t) => {
  const { gw, send } = await rig(t, (res) => {
    res.writeHead(200, { 'content-type': 'Text/Event-Stream; Charset=UTF-8' });
    res.end(CONTENT + USAGE + DONE);
  });
  // No stream_options: the gateway asks for usage itself, and drops the chunk that carries it.
  const res = await send({ stream: true });
  t.equal(res.status, 200);
  t.equal(await res.text(), CONTENT + DONE, 'every event but the usage chunk');
  const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(log.usage, { input_tokens: 7, output_tokens: 3 });
});

t.test('a stream answered as TEXT/EVENT-STREAM that stalls is ended with the error event at the idle timeout', async (t) => {
  const { gw, send } = await rig(t, (res) => {
    res.writeHead(200, { 'content-type': 'TEXT/EVENT-STREAM' });
    res.write(CONTENT);
  });
  const res = await send({ stream: true });
  t.equal(res.status, 200);
  const text = await withTimeout(res.text(), 5000, 'the stream to end');
  t.ok(text.startsWith(CONTENT), 'the event sent before the stall');
  t.match(text.slice(CONTENT.length), /^data: \{"error":\{.*"code":"upstream_idle_timeout"/, "then the protocol's error event");
  const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(log.error_code, 'upstream_idle_timeout');
});

t.test('a plain answer as Application/JSON has its usage read', async (t) => {
  const body = JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
  const { gw, send } = await rig(t, (res) => {
    res.writeHead(200, { 'content-type': 'Application/JSON', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const res = await send({});
  t.equal(res.status, 200);
  t.equal(await res.text(), body, 'as sent');
  const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(log.usage, { input_tokens: 5, output_tokens: 2 });
});
