import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import OpenAI, { APIError } from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { jsonBody, logOf, responseEvents, writeSse } from './helpers/vendor-wire.ts';

// The openai SDK's responses.stream helper expects `response.created` first: a stream that
// fails before its first event is answered with the gateway's HTTP error, which the helper
// raises as a typed APIError with its status and code (an error event after a 200 left it a
// plain OpenAIError without either).

async function helperOutcome(t: Test, respond: (res: ServerResponse, model: string) => void | Promise<void>) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => respond(res, String(jsonBody(req)['model'])), { streamIdleTimeoutMs: 300 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'team-resp', upstream: 'vendor-resp-1' }], protocols: ['x-responses'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const stream = client.responses.stream({ model: 'team-resp', input: 'hi' });
  const eventTypes: string[] = [];
  stream.on('event', (event) => eventTypes.push(event.type));
  const outcome = await withTimeout(
    stream.finalResponse().catch((error: unknown) => error),
    5000,
    'the stream helper to settle',
  );
  return { outcome, eventTypes, gw };
}

for (const failure of [
  { what: 'stalls', status: 504, code: 'upstream_idle_timeout', then: () => {} },
  { what: 'breaks', status: 502, code: 'upstream_stream_broken', then: (res: ServerResponse) => res.socket?.destroy() },
]) {
  t.test(`responses.stream(...).finalResponse(): an upstream that ${failure.what} before its first event raises APIError ${failure.status} ${failure.code}`, async (t) => {
    const { outcome, gw } = await helperOutcome(t, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      failure.then(res);
    });
    t.ok(outcome instanceof APIError, 'a typed APIError');
    const error = outcome as APIError;
    t.equal(error.status, failure.status);
    t.equal(error.code, failure.code);
    t.ok(error.requestID, 'with the request id');
    const log = await logOf(gw, error.requestID);
    t.equal(log?.error_code, failure.code);
  });
}

t.test('responses.stream(...).finalResponse(): a stream that goes well still assembles the response', async (t) => {
  const { outcome, eventTypes } = await helperOutcome(t, (res, model) => writeSse(res, responseEvents(model, ['Hel', 'lo'])));
  t.notOk(outcome instanceof Error, 'no error');
  t.same(eventTypes.slice(0, 2), ['response.created', 'response.in_progress'], 'from the first event on');
  t.equal((outcome as { output_text?: string }).output_text, 'Hello');
});
