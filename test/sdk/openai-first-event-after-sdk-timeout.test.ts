import t from 'tap';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { readIncrementally, waitForLog, withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';

// A successful SSE stream's status and headers wait for its first bytes only for a short grace
// (2 s): an SDK's timeout runs until the headers come, and it retries a timeout, so a model that
// thinks before its first event must not time out through the gateway where it would not direct.

const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'vendor-chat', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

t.test('an SDK timeout shorter than the time to the first event but longer than the grace: the stream succeeds, sent upstream once', async (t) => {
  // Headers at once, the first event after the SDK's timeout: direct, the SDK has its headers in time.
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      const later = setTimeout(() => {
        res.write(chunk({ role: 'assistant', content: 'thought' }, null));
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
      }, 6000);
      res.on('close', () => clearTimeout(later));
    },
    { streamIdleTimeoutMs: 30_000 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  // Three seconds past the grace for the request to reach the upstream and its headers to come back, on a loaded machine too.
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, timeout: 5000 });
  const outcome = await withTimeout(
    (async () => {
      const stream = await client.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }], stream: true });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      return text;
    })().catch((error: unknown) => error),
    20_000,
    'the stream to settle',
  );
  t.equal(outcome, 'thought', 'the whole stream, no timeout');
  t.equal(upstream.requests.length, 1, 'the prompt went upstream once');
});

t.test('a stream silent past the grace gets its 200 and headers, then the error event at the idle timeout', async (t) => {
  let upstreamRes: ServerResponse | undefined;
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      upstreamRes = res;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-upstream-header': 'passed-on' });
      res.flushHeaders();
    },
    { streamIdleTimeoutMs: 2600 },
  );
  t.teardown(() => upstreamRes?.destroy());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const res = await withTimeout(
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] }) }),
    10_000,
    'the answer',
  );
  t.equal(res.status, 200, "the upstream's status: its headers went on before the stream failed");
  t.equal(res.headers.get('content-type'), 'text/event-stream');
  t.equal(res.headers.get('x-upstream-header'), 'passed-on', "the upstream's headers");
  const requestId = res.headers.get('x-switchyard-request-id');
  t.ok(requestId, 'with the request id');
  const text = await withTimeout(readIncrementally(res), 10_000, 'the body');
  t.match(text, /"code":"upstream_idle_timeout"/, 'the in-stream error event');
  const log = await waitForLog(gw, requestId);
  t.equal(log.status, 200, 'logged with the status the client got');
  t.equal(log.error_code, 'upstream_idle_timeout');
  t.equal(upstream.requests.length, 1);
});
