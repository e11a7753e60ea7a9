import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { chatBody, clientAuthHeaders, createKey, deferred, eventually, readIncrementally, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// A client that leaves a completions stream once it has the finish (issue 4 items 3 and 6):
// the upstream's work is done and only the usage chunk is still to come, so the gateway reads
// on for it instead of aborting, and the request is billed and counted against the key's quota.
// A client that leaves while the answer is still being generated aborts the upstream at once
// (streaming-edges.test.ts); one whose upstream sends no usage after the finish, after a bound.

const chunk = (choice: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, ...choice }] })}\n\n`;
const CONTENT = chunk({ delta: { content: 'the whole answer' }, finish_reason: null });
const FINISH = chunk({ delta: {}, finish_reason: 'stop' });
const USAGE = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1000, completion_tokens: 4000, total_tokens: 5000 } })}\n\ndata: [DONE]\n\n`;

interface UpstreamEnd {
  /** The upstream's response ended as it sent it (false: the gateway aborted it). */
  finished: boolean;
}

/** Sends the answer up to its finish, waits for `release`, then (if `usage`) the usage chunk and the end; reports how its response closed. */
function finishThenUsage(release: Promise<void>, ended: (end: UpstreamEnd) => void, usage: boolean) {
  return async (_req: unknown, res: ServerResponse) => {
    res.on('close', () => ended({ finished: res.writableFinished }));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(CONTENT);
    res.write(FINISH);
    await release;
    if (!usage || res.destroyed) return;
    res.end(USAGE);
  };
}

/** Streams a completion and leaves as soon as the finish arrived, the usage chunk not yet sent; waits until the gateway saw the client's connection close. */
async function leaveAfterFinish(gw: Gateway, keyValue: string): Promise<string> {
  const controller = new AbortController();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' },
    body: chatBody('team-m', true),
    signal: controller.signal,
  });
  if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
  const sawFinish = deferred();
  const reading = readIncrementally(res, (text) => {
    if (text.includes('"finish_reason":"stop"')) sawFinish.resolve();
  }).catch(() => undefined);
  await withTimeout(sawFinish.promise, 5000, 'the finish at the client');
  controller.abort();
  await reading;
  await eventually(async () => ((await gw.connections()) === 0 ? true : undefined), 'the gateway to see the client leave');
  return res.headers.get('x-switchyard-request-id')!;
}

/** The key's next request is refused on its quota: the 5,000 tokens of the one before used up its 100. */
async function nextRefusedOnQuota(t: Test, gw: Gateway, keyValue: string): Promise<void> {
  const next = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' },
    body: chatBody('team-m'),
  });
  t.equal(next.status, 429, "the 5,000 tokens used up the key's 100-token quota");
  t.match(await next.json(), { error: { code: 'quota_exceeded' } });
}

t.test('a client that leaves after the finish: the usage chunk is still read, billed and counted against the quota', async (t) => {
  const release = deferred();
  const upstreamEnd = deferred<UpstreamEnd>();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, finishThenUsage(release.promise, upstreamEnd.resolve, true));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-finish'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { tokens: 100 } } });

  const requestId = await leaveAfterFinish(gw, keyValue);
  t.equal(upstreamEnd.settled, false, 'the upstream request was not aborted when the client left after the finish');
  release.resolve();
  t.same(await withTimeout(upstreamEnd.promise, 5000, 'the upstream response to close'), { finished: true }, 'the upstream sent its usage chunk and ended');
  t.match(JSON.parse(upstream.requests[0]!.body.toString()), { stream_options: { include_usage: true } }, 'the gateway asked for the usage the client did not');

  const record = await waitForLog(gw, requestId);
  t.match(record, { status: 200, error_code: 'client_closed', client_aborted: true }, 'the record still says the client left');
  t.match(record.usage, { input_tokens: 1000, output_tokens: 4000 }, 'and carries the usage read after it left');

  await nextRefusedOnQuota(t, gw, keyValue);
  t.equal(upstream.requests.length, 1, 'the refused request never reached the upstream');
});

t.test('a client that leaves after the finish of a stream whose usage never comes: the upstream request is aborted after a bound', async (t) => {
  const upstreamEnd = deferred<UpstreamEnd>();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, finishThenUsage(new Promise(() => {}), upstreamEnd.resolve, false));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-silent'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  const requestId = await leaveAfterFinish(gw, keyValue);
  t.same(await withTimeout(upstreamEnd.promise, 10_000, 'the gateway to abort the upstream request'), { finished: false }, 'aborted, not ended by the upstream');
  const record = await waitForLog(gw, requestId);
  t.match(record, { status: 200, error_code: 'client_closed', client_aborted: true });
  t.notOk(record.usage?.output_tokens, 'no usage was seen');
});

// A plain (non-streamed) answer is whole at the upstream before its first byte is sent: the
// upstream billed all of it. A client that leaves mid-body (a large answer, the usage member
// last) must not leave the request unbilled and outside its quota.
const BIG_CONTENT = 'x'.repeat(512 * 1024);
const PLAIN_HEAD = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"${BIG_CONTENT}`;
const PLAIN_TAIL = '"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":4000,"total_tokens":5000}}';

t.test('a client that leaves a plain answer mid-body: the rest is still read for its usage, billed and counted against the quota', async (t) => {
  const release = deferred();
  const upstreamEnd = deferred<UpstreamEnd>();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.on('close', () => upstreamEnd.resolve({ finished: res.writableFinished }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(PLAIN_HEAD);
    await release.promise;
    if (!res.destroyed) res.end(PLAIN_TAIL);
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-plain'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { tokens: 100 } } });

  const controller = new AbortController();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' },
    body: chatBody('team-m'),
    signal: controller.signal,
  });
  t.equal(res.status, 200);
  const sawBody = deferred();
  const reading = readIncrementally(res, (text) => {
    if (text.length > 0) sawBody.resolve();
  }).catch(() => undefined);
  await withTimeout(sawBody.promise, 5000, 'the first body bytes at the client');
  controller.abort();
  await reading;
  await eventually(async () => ((await gw.connections()) === 0 ? true : undefined), 'the gateway to see the client leave');
  release.resolve();
  t.same(await withTimeout(upstreamEnd.promise, 5000, 'the upstream response to close'), { finished: true }, 'the upstream sent the rest of its answer');

  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'client_closed', client_aborted: true }, 'the record still says the client left');
  t.match(record.usage, { input_tokens: 1000, output_tokens: 4000 }, 'and carries the usage read after it left');
  await nextRefusedOnQuota(t, gw, keyValue);
});
