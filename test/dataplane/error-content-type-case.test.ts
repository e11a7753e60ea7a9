import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, deferred, readIncrementally, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// Media types are case-insensitive (RFC 9110): an error answer whose content-type is
// `Text/Event-Stream` is an event stream, passed on event by event, not read whole first.

t.test('an SSE error answered as Text/Event-Stream reaches the client event by event, while the upstream holds it open', async (t) => {
  const clientSawFirstEvent = deferred();
  let upstreamEnded = false;
  const first = 'event: error\ndata: {"error":{"message":"first"}}\n\n';
  const last = 'data: {"error":"last"}\n\n';
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.writeHead(400, { 'content-type': 'Text/Event-Stream; Charset=UTF-8' });
    res.write(first);
    // Held open until the client has the first event (bounded, so that a failure ends).
    await withTimeout(clientSawFirstEvent.promise, 3000, 'the client to see the first event').catch(() => {});
    upstreamEnded = true;
    res.end(last);
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-case-error-0001'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', stream: true, messages: [] }) });
  t.equal(res.status, 400);
  let firstEventBeforeEnd: boolean | undefined;
  const text = await readIncrementally(res, (soFar) => {
    if (firstEventBeforeEnd !== undefined || !soFar.includes('\n\n')) return;
    firstEventBeforeEnd = !upstreamEnded;
    clientSawFirstEvent.resolve();
  });
  t.equal(firstEventBeforeEnd, true, 'the first event reached the client while the upstream held the stream open');
  t.equal(text, first + last, 'the events as sent');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 400, error_code: 'upstream_400', attempt_count: 1 });
});
