import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { seedRoute, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, deferred, readIncrementally, seedGroup, waitForLog, withTimeout, type Deferred } from './helpers/dataplane-scenarios.ts';
import type { LogRecord } from '../../src/store/logs/index.ts';
import { ManualClock } from '../management/support/gateway.ts';

// A record's time to first byte is when the upstream's answer began to reach the client, its
// status line included: a stream's status and headers sent ahead of its first event count; the
// gateway's own HTTP error in place of the upstream's answer leaves it null.

/** The epoch ms the record puts the first byte at (both are the gateway's clock). */
const firstByteAt = (log: LogRecord) => log.timings.started_at + log.timings.ttfb_ms!;

/**
 * The upstream's wait for the client to have the answer's headers; then the gateway's clock,
 * which stands still otherwise, moves on a second: resolves with the time the upstream goes on.
 * A first byte recorded before that instant was recorded before the upstream went on.
 */
async function afterClientHeaders(clientHasHeaders: Deferred, clock: ManualClock): Promise<number> {
  await clientHasHeaders.promise;
  clock.advance(1000);
  return clock.now;
}

async function completionsRig(t: Test, streamIdleTimeoutMs: number, respond: (res: ServerResponse) => void | Promise<void>, clock = new ManualClock()) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => respond(res), { streamIdleTimeoutMs, clock: clock.read });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const send = () =>
    withTimeout(
      fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] }) }),
      10_000,
      'the answer',
    );
  return { gw, send };
}

async function readAndLog(gw: Gateway, res: Response): Promise<{ text: string; log: LogRecord }> {
  const text = await withTimeout(readIncrementally(res), 10_000, 'the body');
  return { text, log: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
}

for (const failure of [
  { what: 'stalls', status: 504, code: 'upstream_idle_timeout', then: () => {} },
  { what: 'breaks', status: 502, code: 'upstream_stream_broken', then: (res: ServerResponse) => res.socket?.destroy() },
]) {
  t.test(`an SSE stream that ${failure.what} before its first byte, its head held, is the gateway's ${failure.status}: no time to first byte`, async (t) => {
    const { gw, send } = await completionsRig(t, 300, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      failure.then(res);
    });
    const res = await send();
    t.equal(res.status, failure.status, "the gateway's own error answered");
    const { log } = await readAndLog(gw, res);
    t.equal(log.error_code, failure.code);
    t.equal(log.timings.ttfb_ms, null, 'nothing of the upstream reached the client');
  });
}

t.test("an SSE stream whose first event is later than the head's hold: the time to first byte is the head's", async (t) => {
  const clientHasHeaders = deferred();
  const clock = new ManualClock();
  let eventAt = 0;
  const { gw, send } = await completionsRig(t, 30_000, async (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    eventAt = await afterClientHeaders(clientHasHeaders, clock);
    res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'late' } }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  }, clock);
  const res = await send();
  clientHasHeaders.resolve();
  t.equal(res.status, 200);
  const { text, log } = await readAndLog(gw, res);
  t.match(text, /late/, 'the event, after the headers');
  t.equal(log.error_code, null);
  t.type(log.timings.ttfb_ms, 'number');
  t.ok(firstByteAt(log) < eventAt, 'recorded before the upstream sent its first event');
});

t.test('an SSE stream that breaks after its held head went out: the time to first byte is still the head\'s', async (t) => {
  const clientHasHeaders = deferred();
  const clock = new ManualClock();
  let brokenAt = 0;
  const { gw, send } = await completionsRig(t, 30_000, async (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    brokenAt = await afterClientHeaders(clientHasHeaders, clock);
    res.socket?.destroy();
  }, clock);
  const res = await send();
  clientHasHeaders.resolve();
  t.equal(res.status, 200, "the upstream's status: its head went out before the break");
  const { text, log } = await readAndLog(gw, res);
  t.match(text, /upstream_stream_broken/, 'the in-stream error event');
  t.equal(log.error_code, 'upstream_stream_broken');
  t.type(log.timings.ttfb_ms, 'number', "the upstream's status and headers reached the client");
  t.ok(firstByteAt(log) < brokenAt, 'recorded before the break, not at the error event');
});

t.test("a generate JSON-array stream, its headers sent at once: the time to first byte is the headers', not the first element's", async (t) => {
  const clientHasHeaders = deferred();
  const clock = new ManualClock();
  let elementAt = 0;
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      res.flushHeaders();
      elementAt = await afterClientHeaders(clientHasHeaders, clock);
      res.end(`[${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'late' }] }, finishReason: 'STOP' }] })}]`);
    },
    { clock: clock.read },
  );
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await withTimeout(
    fetch(`${gw.url}/v1beta/models/team-m:streamGenerateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    }),
    10_000,
    'the answer',
  );
  clientHasHeaders.resolve();
  t.equal(res.status, 200);
  const { text, log } = await readAndLog(gw, res);
  t.match(text, /late/);
  t.equal(log.error_code, null);
  t.type(log.timings.ttfb_ms, 'number');
  t.ok(firstByteAt(log) < elementAt, 'recorded before the upstream sent its first element');
});
