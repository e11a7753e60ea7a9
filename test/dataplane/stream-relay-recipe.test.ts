import t, { type Test } from 'tap';
import { createServer, request, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SseParser, streamErrorEvent, watchIdle } from '../../src/streaming/index.ts';
import { StreamUsageAccumulator, isUsageOnlyChunk, requestStreamUsage, type TokenUsage } from '../../src/usage/index.ts';
import { UpstreamClient, classifyUpstreamError, clientResponseHeaders, upstreamRequestHeaders } from '../../src/upstream/index.ts';
import { streamFailureOf } from '../../src/dataplane/relay/stream-failure-of.ts';
import { readAll, startLoopbackServer } from './helpers/loopback-server.ts';

/**
 * The blocks composed the way a completions stream handler uses them: forward event by
 * event, read usage on the way, drop the usage chunk the gateway asked for, and end with the
 * protocol's error event when the upstream stalls.
 */
async function startRelay(t: Test, upstreamUrl: string, idleMs: number) {
  const client = new UpstreamClient();
  const usages: Array<TokenUsage | undefined> = [];
  const upstreamBodies: unknown[] = [];
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readAll(req)).toString()) as Record<string, unknown>;
    const injected = requestStreamUsage(body);
    upstreamBodies.push(structuredClone(body));
    const controller = new AbortController();
    const headers = upstreamRequestHeaders(req.headers);
    delete headers['content-length'];
    const upstream = await client.request({
      url: `${upstreamUrl}/v1/chat/completions`,
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const responseHeaders = clientResponseHeaders(upstream.headers);
    delete responseHeaders['content-length'];
    res.writeHead(upstream.status, responseHeaders);
    const parser = new SseParser();
    const usage = new StreamUsageAccumulator('completions');
    const idle = watchIdle(idleMs, () => controller.abort());
    try {
      for await (const chunk of upstream.body) {
        idle.touch();
        for (const event of parser.push(chunk as Buffer)) {
          const parsed = event.data === undefined ? undefined : usage.push(event.data);
          if (injected && isUsageOnlyChunk(parsed)) continue;
          res.write(event.raw);
        }
      }
      for (const event of parser.end()) res.write(event.raw);
    } catch (error) {
      const failure = idle.fired
        ? { ...streamFailureOf('upstream_idle_timeout'), message: 'upstream stalled' }
        : { ...streamFailureOf(classifyUpstreamError(error).code), message: 'upstream stream broke' };
      res.write(streamErrorEvent('completions', failure));
    } finally {
      idle.stop();
      usages.push(usage.result());
      res.end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    server.closeAllConnections();
    server.close();
    await client.destroy();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, usages, upstreamBodies };
}

function post(url: string, body: object): Promise<{ response: IncomingMessage; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' } }, async (response) => {
      resolve({ response, text: (await readAll(response)).toString() });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const chunk = (content: string) => `data: {"choices":[{"index":0,"delta":{"content":"${content}"}}],"usage":null}\n\n`;
const usageChunk = 'data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}\n\n';

t.test('usage is read and its injected chunk withheld; other events pass through verbatim', async (t) => {
  const seenAuth: Array<string | undefined> = [];
  const upstream = await startLoopbackServer(async (req, res) => {
    seenAuth.push(req.headers['authorization']);
    const body = JSON.parse((await readAll(req)).toString());
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('Hel'));
    res.write(chunk('lo'));
    if (body.stream_options?.include_usage) res.write(usageChunk);
    res.end('data: [DONE]\n\n');
  });
  t.teardown(() => upstream.close());
  const relay = await startRelay(t, upstream.url, 5000);

  const asked = await post(relay.url, { model: 'm', stream: true, messages: [] });
  t.equal(asked.text, chunk('Hel') + chunk('lo') + 'data: [DONE]\n\n', 'usage chunk not passed to a client that did not ask');
  t.same(relay.upstreamBodies[0], { model: 'm', stream: true, messages: [], stream_options: { include_usage: true } });

  const wanted = await post(relay.url, { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [] });
  t.equal(wanted.text, chunk('Hel') + chunk('lo') + usageChunk + 'data: [DONE]\n\n', 'kept for a client that asked');

  t.same(relay.usages, [
    { input_tokens: 11, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 },
    { input_tokens: 11, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 },
  ]);
  t.same(seenAuth, [undefined, undefined], 'the client credential never reached the upstream');
});

t.test('a stalled upstream ends the client stream with the completions error event', async (t) => {
  const upstream = await startLoopbackServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('partial'));
  });
  t.teardown(() => upstream.close());
  const relay = await startRelay(t, upstream.url, 50);
  const { text } = await post(relay.url, { model: 'm', stream: true, messages: [] });
  const parser = new SseParser();
  const events = [...parser.push(text), ...parser.end()];
  t.equal(events.length, 2);
  t.equal(events[0]?.raw, chunk('partial'));
  t.same(JSON.parse(events[1]!.data!).error, { message: 'upstream stalled', type: 'server_error', code: 'upstream_idle_timeout', param: null });
  t.same(relay.usages, [undefined]);
});
