import t, { type Test } from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import { startUpstream, startUpstreamAndDataPlane, type Gateway, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { closedPortUrl, clientAuthHeaders, createKey, deferred, eventually, rawRequest, seedGroup, splitUrl, waitForLog } from './helpers/dataplane-scenarios.ts';
import { usd } from './helpers/priced-request.ts';
import type { AccessKeyQuota } from '../../src/store/records.ts';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LOG_DB_FILE } from '../../src/store/logs/index.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { ManualClock, seedAccessKey, seedGroup as seedManagedGroup, startGateway } from '../management/support/gateway.ts';

// Logs, usage and quotas (issue 4 item 6), and what never crosses the gateway: client
// credentials and hop-by-hop headers upstream, the upstream credential anywhere but upstream.

function post(gw: Pick<Gateway, 'url'>, path: string, protocol: string, keyValue: string, body: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...clientAuthHeaders(protocol, keyValue), 'content-type': 'application/json', ...extraHeaders }, body: JSON.stringify(body) });
}

const json = (body: unknown) => (_req: RecordedUpstreamRequest, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

t.test('the log record of a request: ids, route, models, status, attempts, timings, usage with cached and reasoning tokens, cost', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(
    t,
    json({ id: 'c1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200 }, completion_tokens_details: { reasoning_tokens: 100 } } }),
  );
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-log'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.5 }, 'manual');
  const before = Date.now();
  const res = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
  await res.text();
  const requestId = res.headers.get('x-switchyard-request-id');
  const record = await waitForLog(gw, requestId);
  t.equal(record.request_id, requestId, 'the response header carries the log record id');
  t.match(record, {
    access_key_id: key.id,
    group_id: String(group.id),
    channel: 'ch02',
    credential_id: String(credentials[0]!.id),
    protocol: 'x-completions',
    operation: 'chat-completions',
    route_mode: 'N',
    effective: 'native',
    external_model: 'team-m',
    upstream_model: 'vendor-m',
    status: 200,
    error_code: null,
    attempt_count: 1,
    attempts: [{ credential_id: String(credentials[0]!.id), group_id: String(group.id), status: 200, error_code: null }],
    client_aborted: false,
    currency: 'USD',
  });
  t.same(record.usage, { input_tokens: 1000, output_tokens: 500, cached_tokens: 200, reasoning_tokens: 100 });
  // (800 uncached * 3 + 200 cached * 0.5 + 500 * 15) / 1e6
  t.equal(record.cost, 0.01, 'cost from the model price');
  t.ok(record.created_at >= before, 'created_at');
  t.equal(parseInt(requestId!.slice(0, 8) + requestId!.slice(9, 13), 16), record.created_at, 'the id (UUIDv7) carries created_at, which get() relies on');
  t.type(record.timings.ttfb_ms, 'number', 'time to first byte recorded');
  t.ok(record.timings.ttfb_ms! >= 0 && record.timings.ttfb_ms! <= record.timings.duration_ms, 'ttfb within the duration');
  t.equal(record.request_body, undefined, 'no body recorded when the key does not ask');
  const listed = await gw.logs.list({ access_key_id: key.id }, { limit: 10 });
  t.equal(listed.items.length, 1);
  t.equal(listed.items[0]?.has_request_body, false);
});

// Usage is read from every protocol's responses and streams.
const USAGE_CASES = [
  {
    name: 'responses body',
    protocol: 'x-responses',
    channel: 'ch09',
    path: '/v1/responses',
    body: { model: 'team-m', input: 'hi' },
    contentType: 'application/json',
    reply: JSON.stringify({ id: 'resp_1', usage: { input_tokens: 40, output_tokens: 30, input_tokens_details: { cached_tokens: 10 }, output_tokens_details: { reasoning_tokens: 20 } } }),
    usage: { input_tokens: 40, output_tokens: 30, cached_tokens: 10, reasoning_tokens: 20 },
  },
  {
    name: 'responses stream',
    protocol: 'x-responses',
    channel: 'ch09',
    path: '/v1/responses',
    body: { model: 'team-m', input: 'hi', stream: true },
    contentType: 'text/event-stream',
    reply: [
      `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'resp_2' } })}\n\n`,
      `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: { id: 'resp_2', usage: { input_tokens: 41, output_tokens: 31, input_tokens_details: { cached_tokens: 11 }, output_tokens_details: { reasoning_tokens: 21 } } } })}\n\n`,
    ].join(''),
    usage: { input_tokens: 41, output_tokens: 31, cached_tokens: 11, reasoning_tokens: 21 },
  },
  {
    name: 'messages body',
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', max_tokens: 10, messages: [] },
    contentType: 'application/json',
    reply: JSON.stringify({ id: 'msg_1', type: 'message', usage: { input_tokens: 5, cache_read_input_tokens: 20, cache_creation_input_tokens: 3, output_tokens: 9 } }),
    usage: { input_tokens: 28, output_tokens: 9, cached_tokens: 20, reasoning_tokens: 0 },
  },
  {
    name: 'messages stream',
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', max_tokens: 10, messages: [], stream: true },
    contentType: 'text/event-stream',
    reply: [
      `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_2', usage: { input_tokens: 6, cache_read_input_tokens: 12, output_tokens: 1 } } })}\n\n`,
      `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } })}\n\n`,
      `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 15 } })}\n\n`,
      `event: message_stop\ndata: {"type":"message_stop"}\n\n`,
    ].join(''),
    usage: { input_tokens: 18, output_tokens: 15, cached_tokens: 12, reasoning_tokens: 0 },
  },
  {
    name: 'generate body',
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:generateContent',
    body: { contents: [] },
    contentType: 'application/json',
    reply: JSON.stringify({ candidates: [], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 7, thoughtsTokenCount: 13, cachedContentTokenCount: 25, totalTokenCount: 70 } }),
    usage: { input_tokens: 50, output_tokens: 20, cached_tokens: 25, reasoning_tokens: 13 },
  },
  {
    name: 'generate stream',
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:streamGenerateContent?alt=sse',
    body: { contents: [] },
    contentType: 'text/event-stream',
    reply: [
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'a' }] } }], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 1 } })}\r\n\r\n`,
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'b' }] } }], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 8, thoughtsTokenCount: 4 } })}\r\n\r\n`,
    ].join(''),
    usage: { input_tokens: 50, output_tokens: 12, cached_tokens: 0, reasoning_tokens: 4 },
  },
  {
    name: 'chat-style embeddings body',
    protocol: 'x-chat-embeddings',
    channel: 'ch03',
    path: '/v1/embeddings',
    body: { model: 'team-m', input: 'hello' },
    contentType: 'application/json',
    reply: JSON.stringify({ object: 'list', data: [], usage: { prompt_tokens: 6, total_tokens: 6 } }),
    usage: { input_tokens: 6, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 },
  },
];

for (const c of USAGE_CASES) {
  t.test(`usage read from ${c.name}`, async (t) => {
    const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(200, { 'content-type': c.contentType });
      res.end(c.reply);
    });
    await seedGroup(gw.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-usage'] });
    const { keyValue } = await createKey(gw.store, { protocols: [c.protocol] });
    await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 2, output_per_mtok: 10 }, 'manual');
    const res = await post(gw, c.path, c.protocol, keyValue, c.body);
    t.equal(await res.text(), c.reply, 'the reply itself is unchanged');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.same(record.usage, c.usage);
    const expectedCost = usd([c.usage.input_tokens, 2], [c.usage.output_tokens, 10]);
    t.equal(record.cost, expectedCost, 'cost');
  });
}

t.test('alpha search is not counted as model token usage (note 4)', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ results: [], usage: { prompt_tokens: 99, completion_tokens: 99, input_tokens: 99, output_tokens: 99 } }));
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const res = await post(gw, '/v1/alpha/search', 'x-responses', keyValue, { model: 'team-m', query: 'q' });
  t.equal(res.status, 200);
  await res.text();
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.usage, { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
});

/**
 * A ch31 Group for vendor-m (priced 2 / 10 per million tokens) and a responses key with a
 * 200-token quota; `call` sends one request and gives its status and log record.
 */
async function responsesRoute(gw: Awaited<ReturnType<typeof startUpstreamAndDataPlane>>['gw'], baseUrl: string) {
  await seedGroup(gw.store, { channel: 'ch31', baseUrl, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-responses'] });
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 2, output_per_mtok: 10 }, 'manual');
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'], quota: { total: { tokens: 200 } } });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { ...clientAuthHeaders('x-responses', keyValue), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    await res.text();
    return { status: res.status, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
  };
  return { call, none: { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 } };
}

t.test('a stored response fetched or cancelled is not counted again: usage, cost and a tokens quota see its generation once', async (t) => {
  // The upstream keeps the response it generated and answers every read of it with the same object.
  const stored = { id: 'resp_stored', object: 'response', status: 'completed', model: 'vendor-m', output: [], usage: { input_tokens: 100, output_tokens: 50, total_tokens: 150 } };
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json(stored));
  const { call, none } = await responsesRoute(gw, upstream.url);

  const created = await call('POST', '/v1/responses', { model: 'team-m', input: 'hi' });
  t.equal(created.status, 200);
  t.same(created.record.usage, { input_tokens: 100, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0 }, 'the generation is counted');
  t.equal(created.record.cost, (100 * 2 + 50 * 10) / 1e6, 'and priced');
  for (const [method, path, operation] of [['GET', '/v1/responses/resp_stored', 'responses-retrieve'], ['POST', '/v1/responses/resp_stored/cancel', 'responses-cancel']] as const) {
    const read = await call(method, path);
    t.equal(read.status, 200, `${operation} answered`);
    t.match(read.record, { operation, status: 200 });
    t.same(read.record.usage, none, `${operation}: the stored object's usage is not counted again`);
    t.equal(read.record.cost, 0, `${operation}: no cost`);
  }
  // 150 of the 200 tokens are used: one more generation fits; counted twice more, the reads would have used them up.
  t.equal((await call('POST', '/v1/responses', { model: 'team-m', input: 'again' })).status, 200, 'the quota charged the generation once');
  t.equal((await call('POST', '/v1/responses', { model: 'team-m', input: 'third' })).status, 429, 'two generations (300 tokens) exhaust it');
  t.equal(upstream.requests.length, 4);
});

t.test('a background response is counted once, from the first read that reports its usage', async (t) => {
  // The upstream answers a background create queued (no usage yet), then each read of the
  // response as it runs: in progress, then completed with the usage of the whole generation.
  const usage = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
  const reads = [{ status: 'in_progress', usage: null }, { status: 'completed', usage }];
  let read = 0;
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    const state = req.method === 'POST' ? { status: 'queued', usage: null } : reads[Math.min(read++, reads.length - 1)]!;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'resp_bg', object: 'response', model: 'vendor-m', background: true, output: [], ...state }));
  });
  const { call, none } = await responsesRoute(gw, upstream.url);

  const created = await call('POST', '/v1/responses', { model: 'team-m', input: 'hi', background: true });
  t.equal(created.status, 200);
  t.same(created.record.usage, none, 'queued: nothing used yet');
  const running = await call('GET', '/v1/responses/resp_bg');
  t.same(running.record.usage, none, 'in progress: nothing reported yet');
  const done = await call('GET', '/v1/responses/resp_bg');
  t.same(done.record.usage, { input_tokens: 100, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0 }, 'the first read that reports the usage counts it');
  t.equal(done.record.cost, (100 * 2 + 50 * 10) / 1e6, 'and prices it');
  t.match(done.record, { external_model: 'team-m', upstream_model: 'vendor-m' }, 'under the model it was created with, so usage by model counts it');
  t.match(running.record, { external_model: null }, 'a read that bills nothing names no model');
  for (const [method, path] of [['GET', '/v1/responses/resp_bg'], ['POST', '/v1/responses/resp_bg/cancel']] as const) {
    const again = await call(method, path);
    t.same(again.record.usage, none, `${method} ${path} afterwards: not counted again`);
    t.equal(again.record.cost, 0);
  }
  // 150 of the 200 tokens are used: the quota saw the background generation once.
  t.equal((await call('POST', '/v1/responses', { model: 'team-m', input: 'more', background: true })).status, 200, 'the quota has room for another');
  t.equal(upstream.requests.length, 6);
});

t.test("a background response is not found for another AccessKey, and counted once for the key that created it", async (t) => {
  // The upstream answers the background create queued, and every read completed with the usage of the generation.
  const usage = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'resp_shared', object: 'response', model: 'vendor-m', background: true, output: [], ...(req.method === 'POST' && req.url === '/v1/responses' ? { status: 'queued', usage: null } : { status: 'completed', usage }) }));
  });
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-responses'] });
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 2, output_per_mtok: 10 }, 'manual');
  const creator = await createKey(gw.store, { name: 'creator', protocols: ['x-responses'] });
  const reader = await createKey(gw.store, { name: 'reader', protocols: ['x-responses'] });
  const call = async (keyValue: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.url}${path}`, { method, headers: { ...clientAuthHeaders('x-responses', keyValue), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    await res.text();
    return { status: res.status, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
  };
  const none = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

  t.equal((await call(creator.keyValue, 'POST', '/v1/responses', { model: 'team-m', input: 'hi', background: true })).status, 200);
  for (const [method, path] of [['GET', '/v1/responses/resp_shared'], ['POST', '/v1/responses/resp_shared/cancel']] as const) {
    const other = await call(reader.keyValue, method, path);
    t.equal(other.status, 404, `the other key's ${method} ${path} is not found`);
    t.match(other.record, { access_key_id: reader.key.id, error_code: 'resource_not_found', attempt_count: 0 });
    t.same(other.record.usage, none, `the other key's ${method} ${path} counts nothing`);
    t.equal(other.record.cost, 0);
  }
  t.equal(upstream.requests.length, 1, 'nothing of the other key reached the upstream');
  const own = await call(creator.keyValue, 'GET', '/v1/responses/resp_shared');
  t.match(own.record, { access_key_id: creator.key.id });
  t.same(own.record.usage, { input_tokens: 100, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0 }, "the creator's first read that reports the usage counts it");
  t.equal(own.record.cost, (100 * 2 + 50 * 10) / 1e6);
  const again = await call(creator.keyValue, 'GET', '/v1/responses/resp_shared');
  t.same(again.record.usage, none, 'and only once');
  const counted = await gw.logs.list({ access_key_id: creator.key.id }, { limit: 10 });
  t.equal(counted.items.reduce((sum, r) => sum + (r.usage?.input_tokens ?? 0) + (r.usage?.output_tokens ?? 0), 0), 150, "the creator's records hold the 150 tokens once");
});

t.test('a background response streamed to its end is counted from its stream, not again by a read', async (t) => {
  // The upstream streams a background create through response.completed (with the usage of the
  // generation), and answers a later read with the completed response and the same usage.
  const usage = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
  const response = (status: string, withUsage: boolean) => ({ id: 'resp_bgs', object: 'response', model: 'vendor-m', background: true, status, output: [], usage: withUsage ? usage : null });
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    if (req.method === 'POST') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: response('queued', false) })}\n\n`);
      res.end(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 1, response: response('completed', true) })}\n\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response('completed', true)));
  });
  const { call, none } = await responsesRoute(gw, upstream.url);

  const created = await call('POST', '/v1/responses', { model: 'team-m', input: 'hi', background: true, stream: true });
  t.equal(created.status, 200);
  t.same(created.record.usage, { input_tokens: 100, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0 }, 'the stream reported the usage: counted with the create');
  const read = await call('GET', '/v1/responses/resp_bgs');
  t.equal(read.status, 200);
  t.same(read.record.usage, none, 'the read repeats that usage: not counted again');
  t.equal(read.record.cost, 0);
  // 150 of the 200 tokens are used: the quota saw the generation once.
  t.equal((await call('POST', '/v1/responses', { model: 'team-m', input: 'more', background: true, stream: true })).status, 200, 'the quota has room for another');
});

t.test('record_request_body: true stores the original body; false stores none', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [] }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const recording = await createKey(gw.store, { name: 'recording', protocols: ['x-completions'], record_request_body: true });
  const silent = await createKey(gw.store, { name: 'silent', protocols: ['x-completions'], record_request_body: false });
  const original = { model: 'team-m', messages: [{ role: 'user', content: 'secret plans: ünïcödé' }], vendor_extension: { keep: true } };
  const text = JSON.stringify(original, null, 1);
  const send = (keyValue: string) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: text });

  const recorded = await send(recording.keyValue);
  await recorded.text();
  const withBody = await waitForLog(gw, recorded.headers.get('x-switchyard-request-id'));
  t.match(withBody.request_body, { state: 'recorded', original_bytes: Buffer.byteLength(text) });
  t.equal(withBody.request_body?.body, text, 'the original body as sent: external model, not the mapped one, its spacing kept');
  const listed = await gw.logs.list({ access_key_id: recording.key.id }, { limit: 10 });
  t.equal(listed.items[0]?.has_request_body, true);

  const notRecorded = await send(silent.keyValue);
  await notRecorded.text();
  const without = await waitForLog(gw, notRecorded.headers.get('x-switchyard-request-id'));
  t.equal(without.request_body, undefined);
  t.notOk('request_body' in without, 'no request_body field at all');
});

t.test('record_request_body: a body refused as not JSON, or not an object, is recorded as sent (and not when the key does not record)', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [] }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const recording = await createKey(gw.store, { name: 'recording', protocols: ['x-completions'], record_request_body: true });
  const silent = await createKey(gw.store, { name: 'silent', protocols: ['x-completions'], record_request_body: false });
  const send = (keyValue: string, body: string) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  for (const [body, code] of [['{"model": "team-m", "messages": [', 'invalid_json'], ['["team-m"]', 'invalid_request_body']] as const) {
    const refused = await send(recording.keyValue, body);
    t.equal(refused.status, 400);
    t.match(await refused.json(), { error: { code } });
    const record = await waitForLog(gw, refused.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 400, error_code: code, request_body: { state: 'recorded', original_bytes: Buffer.byteLength(body), body } }, `${code}: the body as sent`);
    const unrecorded = await send(silent.keyValue, body);
    await unrecorded.text();
    t.notOk('request_body' in (await waitForLog(gw, unrecorded.headers.get('x-switchyard-request-id'))), `${code}: nothing for a key that does not record`);
  }
  t.equal(upstream.requests.length, 0, 'no refused body reached the upstream');
});

interface QuotaCase {
  name: string;
  quota: AccessKeyQuota;
  protocol: string;
  channel: string;
  path: string;
  body: unknown;
  /** Requests that succeed before the refusal. */
  allowed: number;
  check: (t: Test, body: unknown) => void;
}

const QUOTA_CASES: QuotaCase[] = [
  {
    name: 'total requests, completions client',
    quota: { total: { requests: 2 } },
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    body: { model: 'team-m', messages: [] },
    allowed: 2,
    check: (t, body) => t.match(body, { error: { code: 'quota_exceeded', type: 'rate_limit_error', message: /requests/ } }),
  },
  {
    name: 'requests per day, messages client',
    quota: { per_period: { period: 'day', requests: 1 } },
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    body: { model: 'team-m', max_tokens: 5, messages: [] },
    allowed: 1,
    check: (t, body) => t.match(body, { type: 'error', error: { code: 'quota_exceeded', type: 'rate_limit_error' } }),
  },
  {
    name: 'total tokens, generate client',
    quota: { total: { tokens: 20 } },
    protocol: 'x-generate',
    channel: 'ch15',
    path: '/v1beta/models/team-m:generateContent',
    body: { contents: [] },
    allowed: 2,
    check: (t, body) => t.match(body, { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ reason: 'quota_exceeded' }], message: /tokens/ } }),
  },
  {
    name: 'tokens per hour, completions client',
    quota: { per_period: { period: 'hour', tokens: 15 } },
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    body: { model: 'team-m', messages: [] },
    allowed: 2,
    check: (t, body) => t.match(body, { error: { code: 'quota_exceeded', message: /tokens/ } }),
  },
];

// Each answer costs 12 tokens (8 in, 4 out) in every protocol's usage fields.
function usageReply(protocol: string): string {
  if (protocol === 'x-messages') return JSON.stringify({ type: 'message', usage: { input_tokens: 8, output_tokens: 4 } });
  if (protocol === 'x-generate') return JSON.stringify({ candidates: [], usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 4 } });
  return JSON.stringify({ choices: [], usage: { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 } });
}

for (const c of QUOTA_CASES) {
  t.test(`quota exhaustion (${c.name}) answers 429 quota_exceeded in the client protocol`, async (t) => {
    // The gateway's clock stands still half way through an hour (10:30 UTC): every request falls in one hour and day, and the wait until the next is known exactly.
    const clock = new ManualClock();
    clock.advance(30 * 60_000);
    const { gw, upstream } = await startUpstreamAndDataPlane(
      t,
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(usageReply(c.protocol));
      },
      { clock: clock.read },
    );
    await seedGroup(gw.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
    const { keyValue } = await createKey(gw.store, { protocols: [c.protocol], quota: c.quota });
    for (let i = 0; i < c.allowed; i++) {
      const res = await post(gw, c.path, c.protocol, keyValue, c.body);
      t.equal(res.status, 200, `request ${i + 1} within the quota`);
      await res.text();
      await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    }
    const refused = await post(gw, c.path, c.protocol, keyValue, c.body);
    t.equal(refused.status, 429);
    c.check(t, await refused.json());
    // A per-period limit lifts at the next UTC hour (11:00, 1,800 s on) or day (midnight, 13.5 h on); a total one never.
    const period = c.quota.per_period?.period;
    if (period === 'hour' || period === 'day') {
      t.equal(refused.headers.get('retry-after'), period === 'hour' ? '1800' : '48600', `Retry-After until the next ${period}`);
    } else {
      t.equal(refused.headers.get('retry-after'), null, 'a total limit does not lift by itself');
    }
    t.equal(refused.headers.get('x-should-retry'), 'false', 'the SDKs are told not to retry it');
    t.equal(upstream.requests.length, c.allowed, 'the refused request reached no upstream');
    const record = await waitForLog(gw, refused.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 429, error_code: 'quota_exceeded' });
  });
}

t.test('refused requests and model lists do not use up a requests quota, so raising the limit lets exactly that many more through', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { requests: 1 } } });
  const chat = async () => {
    const res = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
    await res.text();
    await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    return res.status;
  };
  t.equal(await chat(), 200);
  const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${keyValue}` } });
  t.equal(models.status, 200, 'a model list is answered');
  await waitForLog(gw, models.headers.get('x-switchyard-request-id'));
  for (let i = 0; i < 3; i++) t.equal(await chat(), 429, `retry ${i + 1} after the quota is used up is refused`);
  await gw.store.accessKeys.update(key.id, { quota: { total: { requests: 2 } } });
  t.equal(await chat(), 200, 'one more request fits the raised limit');
  t.equal(await chat(), 429);
  t.equal(upstream.requests.length, 2);
});

t.test('concurrent requests cannot pass a requests quota together: those in flight hold their places', async (t) => {
  const release = deferred();
  const { gw, upstream } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    await release.promise;
    json({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })(_req, res);
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { requests: 3 } } });
  let refused = 0;
  const answers = Array.from({ length: 10 }, async () => {
    const res = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
    if (res.status === 429) refused++;
    await res.text();
    return res.status;
  });
  // The admitted requests wait at the upstream until every request has been decided.
  await eventually(() => (refused + upstream.requests.length === 10 ? true : undefined), 'every request admitted or refused');
  release.resolve();
  const statuses = await Promise.all(answers);
  t.equal(statuses.filter((s) => s === 200).length, 3, 'exactly the limit was let through');
  t.equal(statuses.filter((s) => s === 429).length, 7);
  t.equal(upstream.requests.length, 3);
});

t.test('a cost quota refuses once the priced usage reaches it', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [], usage: { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 } }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 1, output_per_mtok: 1 }, 'manual');
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { cost: 0.002 } } });
  const first = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
  t.equal(first.status, 200);
  await first.text();
  await waitForLog(gw, first.headers.get('x-switchyard-request-id'));
  const second = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
  t.equal(second.status, 429);
  t.match(await second.json(), { error: { code: 'quota_exceeded', message: /cost/ } });
  t.equal(upstream.requests.length, 1);
});

t.test('ten costs of $0.10 reach a cost limit of 1 exactly: the 11th is refused, and usage, home and statistics show 1', async (t) => {
  // 1000 input tokens at 100 USD per million: 0.1 USD a request, which floats do not sum to 1.
  const upstream = await startUpstream(json({ choices: [], usage: { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 } }));
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedManagedGroup(gw, ['team-m'], { base_url: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-cost-0001' })).status, 200);
  t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: { input_per_mtok: 100, output_per_mtok: 0 }, headers: { 'Idempotency-Key': 'price-1' } })).status, 200);
  const key = await seedAccessKey(gw, { quota: { total: { cost: 1 } } });
  const statuses: number[] = [];
  for (let i = 0; i < 11; i++) {
    const res = await post(gw, '/v1/chat/completions', 'x-completions', key.value, { model: 'team-m', messages: [] });
    statuses.push(res.status);
    await res.text();
  }
  t.same(statuses, [...Array(10).fill(200), 429], 'ten requests within the limit, the 11th refused');
  t.equal(upstream.requests.length, 10);
  const usage = (await gw.api('GET', '/api/usage')).json.data;
  t.equal(usage.totals.cost, 1, 'usage totals');
  t.same(usage.rows.map((r: { cost: number }) => r.cost), [1], 'the one day row');
  const home = (await gw.api('GET', '/api/home', { token: key.value })).json.data;
  t.match(home.quota, { exceeded: true, lines: [{ metric: 'cost', limit: 1, used: 1 }] });
  t.equal(home.today.cost, 1, 'today');
  gw.clock.advance(1);
  const statistics = (await gw.api('GET', '/api/home/statistics')).json.data;
  t.equal(statistics.totals.cost, 1, 'statistics totals');
  t.same(statistics.series.map((r: { cost: number }) => r.cost), [1], 'statistics series');
});

t.test('a quota edited while a request is in flight: the request keeps its place, and gives it back once', async (t) => {
  const release = deferred();
  const { gw, upstream } = await startUpstreamAndDataPlane(t, async (req, res) => {
    if (JSON.parse(req.body.toString()).slow) await release.promise;
    json({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })(req, res);
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { requests: 1 } } });
  const chat = async (body: Record<string, unknown> = {}) => {
    const res = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [], ...body });
    await res.text();
    await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    return res.status;
  };
  const slow = chat({ slow: true });
  await eventually(() => (upstream.requests.length === 1 ? true : undefined), 'the slow request at the upstream');
  t.equal(await chat(), 429, 'the one place is held by the request in flight');
  await gw.store.accessKeys.update(key.id, { quota: { total: { requests: 1, tokens: 1_000_000 } } });
  t.same(await Promise.all([chat(), chat()]), [429, 429], 'after the edit the request in flight still holds the place');
  release.resolve();
  t.equal(await slow, 200);
  t.equal(await chat(), 429, 'one request forwarded of one');
  await gw.store.accessKeys.update(key.id, { quota: { total: { requests: 2 } } });
  t.equal(await chat(), 200, 'the finished request gave its place back: a raised limit of 2 lets one more through');
  t.equal(await chat(), 429);
  t.equal(upstream.requests.length, 2);
});

t.test('the key query parameter authenticates and is removed before forwarding; other parameters stay', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"candidates":[]}\r\n\r\n');
  });
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-query'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await fetch(`${gw.url}/v1beta/models/team-m:streamGenerateContent?alt=sse&key=${encodeURIComponent(keyValue)}&trace=a%2Fb`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(res.status, 200);
  await res.text();
  const seen = upstream.requests[0]!;
  const { path, query } = splitUrl(seen.url);
  t.equal(path, '/v1beta/models/vendor-m:streamGenerateContent');
  t.equal(query.get('key'), null, 'key removed');
  t.equal(query.get('alt'), 'sse');
  t.equal(query.get('trace'), 'a/b');
  t.notOk(seen.url.includes(keyValue), 'the AccessKey is nowhere in the upstream URL');
  t.equal(seen.headers['x-goog-api-key'], 'sk-up-query');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.access_key_id, key.id);
});

t.test('hop-by-hop headers and client credentials never reach the upstream; hop-by-hop response headers never reach the client', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive, x-up-hop', 'x-up-hop': 'drop', 'keep-alive': 'timeout=99', 'x-up-kept': 'yes' });
    res.end(JSON.stringify({ type: 'message', usage: { input_tokens: 1, output_tokens: 1 } }));
  });
  await seedGroup(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-hop'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-messages'] });
  const res = await rawRequest(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${keyValue}`,
      'x-api-key': keyValue,
      'x-goog-api-key': keyValue,
      'api-key': keyValue,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'tools-2024',
      connection: 'keep-alive, x-client-hop',
      'x-client-hop': 'drop',
      'keep-alive': 'timeout=77',
      te: 'trailers',
      'proxy-authorization': 'Basic c2VjcmV0',
      'x-client-kept': 'yes',
    },
    body: JSON.stringify({ model: 'team-m', max_tokens: 5, messages: [] }),
  });
  t.equal(res.status, 200);
  const seen: IncomingHttpHeaders = upstream.requests[0]!.headers;
  t.equal(seen['x-api-key'], 'sk-up-hop', 'the upstream credential, in the messages-style header');
  for (const name of ['authorization', 'x-goog-api-key', 'api-key', 'x-client-hop', 'te', 'proxy-authorization']) t.equal(seen[name], undefined, `no ${name} upstream`);
  t.not(seen['keep-alive'], 'timeout=77', "the client's keep-alive is not forwarded");
  t.notMatch(String(seen.connection ?? ''), /x-client-hop/, "the client's connection header is not forwarded");
  t.notOk(JSON.stringify(seen).includes(keyValue), 'the AccessKey appears in no upstream header');
  t.equal(seen['anthropic-version'], '2023-06-01', 'protocol headers are forwarded');
  t.equal(seen['anthropic-beta'], 'tools-2024');
  t.equal(seen['x-client-kept'], 'yes', 'ordinary headers are forwarded');

  t.equal(res.headers['x-up-hop'], undefined, 'a header the upstream named in Connection does not reach the client');
  t.not(res.headers['keep-alive'], 'timeout=99', "the upstream's keep-alive does not reach the client");
  t.equal(res.headers['x-up-kept'], 'yes');
});

t.test('the upstream credential appears in no response and no log record', async (t) => {
  const SECRET = 'sk-upstream-NEVER-LEAK-7f3a9c';
  let mode: 'ok' | '400' | '401' | 'stream' | '500' = 'ok';
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
    if (mode === '401') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"Incorrect API key provided: sk-up****9c","type":"invalid_request_error"}}');
    } else if (mode === '400' || mode === '500') {
      // An upstream (or a relay before it) that echoes the key it was sent, in a header and the body.
      res.writeHead(Number(mode), { 'content-type': 'application/json', 'x-echo': `key=${SECRET}` });
      res.end(`{"error":{"message":"boom for key ${SECRET}, really ${SECRET}"}}`);
    } else if (mode === 'stream') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}');
    }
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: [SECRET] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: [{ external: 'dead-m', upstream: 'vendor-m' }], secrets: [SECRET] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], record_request_body: true });
  const transcripts: string[] = [];
  const ids: string[] = [];
  const call = async (model: string, stream = false) => {
    const res = await post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model, messages: [], ...(stream ? { stream: true } : {}) });
    transcripts.push(JSON.stringify([...res.headers]) + (await res.text()));
    const id = res.headers.get('x-switchyard-request-id');
    if (id) ids.push(id);
  };
  await call('team-m');
  mode = 'stream';
  await call('team-m', true);
  mode = '400';
  await call('team-m');
  t.match(transcripts.at(-1), /boom for key \*\*\*3a9c, really \*\*\*3a9c/, 'an echoed key is masked, the rest of the error passes as sent');
  mode = '500';
  await call('team-m');
  mode = '401';
  await call('team-m');
  await call('team-m'); // the credential is now disabled: no_available_credential
  await call('dead-m'); // connection refused
  await call('unknown-m'); // refused before routing
  t.match(transcripts[3], /boom for key \*\*\*3a9c/, 'also in the last failed attempt of a failover');
  t.equal(transcripts.length, 8);
  t.equal(ids.length, 8, 'every response carries a request id');
  for (const [i, text] of transcripts.entries()) t.notOk(text.includes(SECRET), `response ${i + 1} does not contain the upstream credential`);
  for (const id of ids) {
    const record = await waitForLog(gw, id);
    t.notOk(JSON.stringify(record).includes(SECRET), `log record ${id} does not contain the upstream credential`);
  }
  const page = await gw.logs.list({}, { limit: 50 });
  t.notOk(JSON.stringify(page).includes(SECRET), 'nor the log list');
});

/** Makes every write of the gateway's log store fail with a SQLite error, as a full disk would (from another connection) until `restore`. */
function failLogInserts(t: Test, gw: Gateway): { restore(): void } {
  const db = new Database(join(gw.dataDir, LOG_DB_FILE));
  const restore = () => db.exec('DROP TRIGGER IF EXISTS fail_log_inserts');
  t.teardown(() => {
    restore();
    db.close();
  });
  db.exec(`CREATE TRIGGER fail_log_inserts BEFORE INSERT ON log_batches BEGIN SELECT RAISE(ABORT, 'log inserts refused by the test'); END`);
  return { restore };
}

t.test('while the log store fails, a key with a quota is refused 503 log_store_unavailable (not run unmetered); it passes again once the store works', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const unmetered = await createKey(gw.store, { protocols: ['x-completions'] });
  const metered = await createKey(gw.store, { protocols: ['x-completions'], quota: { total: { requests: 10 } } });
  const logInserts = failLogInserts(t, gw);
  const chat = (keyValue: string) => post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });

  const free = await chat(unmetered.keyValue);
  t.equal(free.status, 200, 'a key without a quota does not read the store');
  await free.text();
  // Its record now waits in the store, which cannot write it: every read (they write first) fails.
  await eventually(() => (gw.logs.buffered > 0 ? true : undefined), 'the record in the store');
  for (let i = 0; i < 2; i++) {
    const refused = await chat(metered.keyValue);
    t.equal(refused.status, 503, `request ${i + 1} of the key with a quota is refused`);
    t.match(await refused.json(), { error: { code: 'log_store_unavailable' } });
  }
  t.equal(upstream.requests.length, 1, 'no refused request reached the upstream');

  logInserts.restore();
  const passed = await chat(metered.keyValue);
  t.equal(passed.status, 200, 'once the store writes again, the key is metered and served');
  await passed.text();
  t.equal(upstream.requests.length, 2);
});

t.test('while the log store fails, a key whose quota sets no limit is served like a key without one', async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, json({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const unmetered = await createKey(gw.store, { protocols: ['x-completions'] });
  const limitless = [
    await createKey(gw.store, { protocols: ['x-completions'], quota: { total: {} } }),
    await createKey(gw.store, { protocols: ['x-completions'], quota: { per_period: { period: 'day' } } }),
  ];
  failLogInserts(t, gw);
  const chat = (keyValue: string) => post(gw, '/v1/chat/completions', 'x-completions', keyValue, { model: 'team-m', messages: [] });
  const free = await chat(unmetered.keyValue);
  t.equal(free.status, 200);
  await free.text();
  await eventually(() => (gw.logs.buffered > 0 ? true : undefined), 'the record in the store');
  for (const k of limitless) {
    const res = await chat(k.keyValue);
    t.equal(res.status, 200, `quota ${JSON.stringify(k.key.quota)} reads no usage`);
    await res.text();
  }
  t.equal(upstream.requests.length, 3);
});
