import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane, type Gateway, type Upstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, deferred, readIncrementally, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// A successful SSE stream's status and headers go to the client with its first bytes: one that
// stalls or breaks before them is answered with the gateway's HTTP error (504
// upstream_idle_timeout, 502 upstream_stream_broken) in the client protocol's error shape, not
// a 200 with an error event, and is not failed over (the upstream accepted the request).

interface Style {
  name: string;
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  /** Two events of a stream; the second ends it. */
  events: [string, string];
  /** Reads the reason code out of the gateway's error body, checking the protocol's shape. */
  codeOf: (t: Test, body: unknown, status: number) => unknown;
}

const openaiShape = (t: Test, body: unknown) => {
  t.match(body, { error: { message: String, type: String, param: null } }, 'the openai error shape');
  return (body as { error: { code: unknown } }).error.code;
};

const STYLES: Style[] = [
  {
    name: 'completions',
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    body: { model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    events: [`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'event-one' } }] })}\n\n`, 'data: [DONE]\n\n'],
    codeOf: openaiShape,
  },
  {
    name: 'responses',
    protocol: 'x-responses',
    channel: 'ch09',
    path: '/v1/responses',
    body: { model: 'team-m', stream: true, input: 'hi' },
    events: [
      `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', note: 'event-one' } })}\n\n`,
      `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { id: 'resp_1', status: 'completed' } })}\n\n`,
    ],
    codeOf: openaiShape,
  },
  {
    name: 'messages',
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    events: [
      `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', note: 'event-one', usage: { input_tokens: 3, output_tokens: 0 } } })}\n\n`,
      `event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop' })}\n\n`,
    ],
    codeOf: (t, body) => {
      t.match(body, { type: 'error', error: { type: String, message: String } }, 'the messages error shape');
      return (body as { error: { details: { error_code: unknown } } }).error.details.error_code;
    },
  },
  {
    name: 'generate',
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:streamGenerateContent?alt=sse',
    body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    events: [
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'event-one' }] } }] })}\r\n\r\n`,
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'two' }] }, finishReason: 'STOP' }] })}\r\n\r\n`,
    ],
    codeOf: (t, body, status) => {
      t.match(body, { error: { code: status, message: String, status: String } }, 'the generate error shape');
      return (body as { error: { details: { reason: unknown }[] } }).error.details[0]?.reason;
    },
  },
];

/** The style's route with two credentials (a failover would show as a second upstream request). */
async function rig(t: Test, style: Style, respond: (res: ServerResponse) => void | Promise<void>): Promise<{ gw: Gateway; upstream: Upstream; send: () => Promise<Response> }> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => respond(res), { streamIdleTimeoutMs: 300 });
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-first-000001', 'sk-second-00002'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const send = () => fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...clientAuthHeaders(style.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(style.body) });
  return { gw, upstream, send };
}

const FAILURES = [
  {
    what: 'stalls',
    code: 'upstream_idle_timeout',
    status: 504,
    then: () => {
      /* sends nothing more */
    },
  },
  { what: 'breaks', code: 'upstream_stream_broken', status: 502, then: (res: ServerResponse) => res.socket?.destroy() },
];

for (const style of STYLES) {
  for (const failure of FAILURES) {
    t.test(`${style.name}: an upstream that ${failure.what} after its 200 and headers, before any event, is answered ${failure.status} ${failure.code}`, async (t) => {
      const { gw, upstream, send } = await rig(t, style, (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-upstream-header': 'kept-back' });
        res.flushHeaders();
        failure.then(res);
      });
      const res = await withTimeout(send(), 5000, 'the answer');
      t.equal(res.status, failure.status, "the gateway's status, not the upstream's 200");
      t.match(res.headers.get('content-type'), /^application\/json/);
      t.equal(res.headers.get('x-upstream-header'), null, "none of the upstream's headers");
      const requestId = res.headers.get('x-switchyard-request-id');
      t.ok(requestId, 'with the request id');
      t.equal(style.codeOf(t, await res.json(), failure.status), failure.code, "the reason code in the protocol's error shape");
      const log = await waitForLog(gw, requestId);
      t.equal(log.error_code, failure.code, 'logged with that code');
      t.equal(log.status, failure.status, 'logged with the status the client got');
      t.match(log.attempts, [{ error_code: failure.code }]);
      t.equal(upstream.requests.length, 1, 'no failover: the upstream accepted the request');
    });
  }

  t.test(`${style.name}: a stream that starts goes to the client event by event`, async (t) => {
    const clientHasFirst = deferred();
    let secondSent = false;
    const { send } = await rig(t, style, async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(style.events[0]);
      // Bounded, so that a gateway that holds the first event fails the test rather than hangs it.
      await withTimeout(clientHasFirst.promise, 3000, 'the client to read the first event').catch(() => {});
      secondSent = true;
      res.end(style.events[1]);
    });
    const res = await withTimeout(send(), 5000, 'the answer');
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'text/event-stream', "the upstream's headers, with its first event");
    t.ok(res.headers.get('x-switchyard-request-id'), 'and the request id');
    let firstBeforeSecond: boolean | undefined;
    const text = await readIncrementally(res, (soFar) => {
      if (firstBeforeSecond !== undefined || !soFar.includes('event-one')) return;
      firstBeforeSecond = !secondSent;
      clientHasFirst.resolve();
    });
    t.equal(firstBeforeSecond, true, 'the first event reached the client before the upstream sent the second');
    t.equal(text, style.events.join(''), 'both events, as sent');
  });
}
