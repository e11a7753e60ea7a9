import t, { type Test } from 'tap';
import { startDataPlane, startUpstream, startUpstreamAndDataPlane, type Gateway, type Upstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import type { NewAccessKey } from '../../src/store/config-store.ts';
import { checkErrorShape, type Style } from './helpers/error-shape.ts';

// Refusals happen before any upstream call (decisions.md §3): every case below asserts the
// status, the reason code in the client protocol's error shape (decisions.md §6), the log
// record's error code, and that the substitute upstream received nothing at all.


interface RefusalCase {
  name: string;
  channel: string;
  protocols: string[];
  key?: Partial<NewAccessKey>;
  /** Model mappings of the Group (external = upstream unless given). */
  models?: string[];
  /** `raw` is sent as it is (a body that is not valid JSON); `body` is sent as JSON. */
  request: { method: string; path: string; protocol: string; body?: unknown; raw?: string; form?: FormData };
  status: number;
  code: string;
  style: Style;
  /** Also in the error message (a matrix note, say). */
  message?: RegExp;
  /** The operation the log record names (the path's spelling decides it). */
  operation?: string;
}

const json = (protocol: string, path: string, body: unknown, method = 'POST') => ({ method, path, protocol, body });

const CASES: RefusalCase[] = [
  // Bodies the gateway cannot route: refused in the client's protocol, read whole or not.
  { name: 'malformed JSON body on completions', channel: 'ch02', protocols: ['x-completions'], models: ['m'], request: { method: 'POST', path: '/v1/chat/completions', protocol: 'x-completions', raw: '{"model":"m","messages":[' }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'JSON array body on messages', channel: 'ch14', protocols: ['x-messages'], models: ['m'], request: { method: 'POST', path: '/v1/messages', protocol: 'x-messages', raw: '[{"model":"m"}]' }, status: 400, code: 'invalid_request_body', style: 'messages' },
  // A form sent to an endpoint that takes JSON is not routed by its fields: it is refused as
  // the JSON it is not, so a rule that reads the body (note 11 below) cannot be stepped around.
  { name: 'a form on chat completions', channel: 'ch02', protocols: ['x-completions'], models: ['m'], request: { method: 'POST', path: '/v1/chat/completions', protocol: 'x-completions', form: fields({ model: 'm', stream: 'true' }) }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'a form on messages', channel: 'ch14', protocols: ['x-messages'], models: ['m'], request: { method: 'POST', path: '/v1/messages', protocol: 'x-messages', form: fields({ model: 'm', max_tokens: '5' }) }, status: 400, code: 'invalid_json', style: 'messages' },
  { name: 'a form on generate', channel: 'ch14', protocols: ['x-generate'], models: ['m'], request: { method: 'POST', path: '/v1beta/models/m:generateContent', protocol: 'x-generate', form: fields({ model: 'm' }) }, status: 400, code: 'invalid_json', style: 'generate' },
  { name: 'a form continuing a response on ch29 (note 11 reads the JSON body)', channel: 'ch29', protocols: ['x-responses'], models: ['m'], request: { method: 'POST', path: '/v1/responses', protocol: 'x-responses', form: fields({ model: 'm', previous_response_id: 'resp_abc', input: 'hi' }) }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'a JSON body opening with a byte order mark', channel: 'ch02', protocols: ['x-completions'], models: ['m'], request: { method: 'POST', path: '/v1/chat/completions', protocol: 'x-completions', raw: '\ufeff{"model":"m","messages":[]}' }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'a spooled JSON body opening with a byte order mark', channel: 'ch02', protocols: ['x-completions'], models: ['m'], request: { method: 'POST', path: '/v1/chat/completions', protocol: 'x-completions', raw: `\ufeff{"model":"m","messages":[{"role":"user","content":"${'x'.repeat(1_100_000)}"}]}` }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'empty body on generate (its model is in the path)', channel: 'ch14', protocols: ['x-generate'], models: ['m'], request: { method: 'POST', path: '/v1beta/models/m:generateContent', protocol: 'x-generate', raw: '' }, status: 400, code: 'invalid_json', style: 'generate' },
  { name: 'empty body on chat completions', channel: 'ch02', protocols: ['x-completions'], models: ['m'], request: { method: 'POST', path: '/v1/chat/completions', protocol: 'x-completions', raw: '' }, status: 400, code: 'invalid_json', style: 'completions' },
  { name: 'malformed JSON body on generate', channel: 'ch14', protocols: ['x-generate'], models: ['m'], request: { method: 'POST', path: '/v1beta/models/m:generateContent', protocol: 'x-generate', raw: '{"contents":' }, status: 400, code: 'invalid_json', style: 'generate' },
  // C cells: conversion comes with the conversion issue.
  { name: 'messages on ch02 (C)', channel: 'ch02', protocols: ['x-messages'], models: ['m'], request: json('x-messages', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }), status: 400, code: 'conversion_not_available', style: 'messages' },
  { name: 'responses on ch02 (C)', channel: 'ch02', protocols: ['x-responses'], models: ['m'], request: json('x-responses', '/v1/responses', { model: 'm', input: 'hi' }), status: 400, code: 'conversion_not_available', style: 'completions' },
  { name: 'generate on ch02 (C)', channel: 'ch02', protocols: ['x-generate'], models: ['m'], request: json('x-generate', '/v1beta/models/m:generateContent', { contents: [] }), status: 400, code: 'conversion_not_available', style: 'generate' },
  { name: 'chat completions on ch14 (C)', channel: 'ch14', protocols: ['x-completions'], models: ['m'], request: json('x-completions', '/v1/chat/completions', { model: 'm', messages: [] }), status: 400, code: 'conversion_not_available', style: 'completions' },
  // - cells.
  { name: 'image generation on ch02 (-)', channel: 'ch02', protocols: ['x-images'], models: ['m'], request: json('x-images', '/v1/images/generations', { model: 'm', prompt: 'p' }), status: 400, code: 'route_not_declared', style: 'completions' },
  { name: 'count tokens on ch02 (-)', channel: 'ch02', protocols: ['x-messages'], models: ['m'], request: json('x-messages', '/v1/messages/count_tokens', { model: 'm', messages: [] }), status: 400, code: 'route_not_declared', style: 'messages' },
  { name: 'chat completions on ch01 (not a conversation channel, note 7)', channel: 'ch01', protocols: ['x-completions'], models: ['m'], request: json('x-completions', '/v1/chat/completions', { model: 'm', messages: [] }), status: 400, code: 'not_a_conversation_channel', style: 'completions', message: /note 7\b/ },
  { name: 'responses input tokens on ch32 (note 3)', channel: 'ch32', protocols: ['x-responses'], models: ['m'], request: json('x-responses', '/v1/responses/input_tokens', { model: 'm', input: 'hi' }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 3/ },
  { name: 'rerank on ch02 (no extra protocol)', channel: 'ch02', protocols: ['rerank'], models: ['m'], request: json('rerank', '/v1/rerank', { model: 'm', query: 'q', documents: ['a'] }), status: 400, code: 'route_not_declared', style: 'completions' },
  { name: 'retrieve on ch29 (note 11)', channel: 'ch29', protocols: ['x-responses'], request: { method: 'GET', path: '/v1/responses/resp_1', protocol: 'x-responses' }, status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 11/ },
  // Note 11: "generate-style and responses resource endpoints are unsupported" (all of them).
  { name: 'countTokens on ch29 (note 11)', channel: 'ch29', protocols: ['x-generate'], models: ['m'], request: json('x-generate', '/v1beta/models/m:countTokens', { contents: [] }), status: 400, code: 'restricted_by_channel_note', style: 'generate', message: /note 11/ },
  { name: 'embedContent on ch30 (note 11)', channel: 'ch30', protocols: ['x-embeddings'], models: ['m'], request: json('x-embeddings', '/v1beta/models/m:embedContent', { content: { parts: [{ text: 'a' }] } }), status: 400, code: 'restricted_by_channel_note', style: 'generate', message: /note 11/ },
  { name: 'batchEmbedContents on ch29 (note 11)', channel: 'ch29', protocols: ['x-embeddings'], models: ['m'], request: json('x-embeddings', '/v1beta/models/m:batchEmbedContents', { requests: [] }), status: 400, code: 'restricted_by_channel_note', style: 'generate', message: /note 11/ },
  // N* outside the subset (note 3).
  { name: 'retrieve on ch32 (N*)', channel: 'ch32', protocols: ['x-responses'], request: { method: 'GET', path: '/v1/responses/resp_1', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/ },
  { name: 'delete on ch32 (N*)', channel: 'ch32', protocols: ['x-responses'], request: { method: 'DELETE', path: '/v1/responses/resp_1', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/ },
  { name: 'cancel on ch33 (N*)', channel: 'ch33', protocols: ['x-responses'], request: { method: 'POST', path: '/v1/responses/resp_1/cancel', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/ },
  { name: 'input items on ch32 (N*)', channel: 'ch32', protocols: ['x-responses'], request: { method: 'GET', path: '/v1/responses/resp_1/input_items', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/ },
  { name: 'namespace passthrough on ch34 (N*: compaction only)', channel: 'ch34', protocols: ['x-responses'], request: json('x-responses', '/v1/responses/ns/thing', { a: 1 }), status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/ },
  // The same operations spelled with extra slashes are still those operations, not the
  // namespace passthrough that ch32 and ch33 allow.
  { name: 'retrieve on ch32 with a trailing slash (N*)', channel: 'ch32', protocols: ['x-responses'], request: { method: 'GET', path: '/v1/responses/resp_1/', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/, operation: 'responses-retrieve' },
  { name: 'delete on ch33 with a doubled slash (N*)', channel: 'ch33', protocols: ['x-responses'], request: { method: 'DELETE', path: '/v1/responses//resp_1', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/, operation: 'responses-delete' },
  { name: 'cancel on ch32 with a trailing slash (N*)', channel: 'ch32', protocols: ['x-responses'], request: { method: 'POST', path: '/v1/responses/resp_1/cancel/', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/, operation: 'responses-cancel' },
  { name: 'cancel on ch33 with an encoded slash (N*)', channel: 'ch33', protocols: ['x-responses'], request: { method: 'POST', path: '/v1/responses/resp_1%2Fcancel', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/, operation: 'responses-cancel' },
  { name: 'input items on ch33 with two trailing slashes (N*)', channel: 'ch33', protocols: ['x-responses'], request: { method: 'GET', path: '/v1/responses/resp_1/input_items//', protocol: 'x-responses' }, status: 400, code: 'operation_outside_native_subset', style: 'completions', message: /note 3\b/, operation: 'responses-input-items' },
  { name: 'responses input tokens on ch32 with a trailing slash (note 3)', channel: 'ch32', protocols: ['x-responses'], models: ['m'], request: json('x-responses', '/v1/responses/input_tokens/', { model: 'm', input: 'hi' }), status: 400, code: 'restricted_by_channel_note', style: 'completions', operation: 'responses-input-tokens', message: /note 3/ },
  // Note 1 limits on the converted image route of ch15.
  { name: 'image generation on ch15 streaming (note 1)', channel: 'ch15', protocols: ['x-images'], models: ['img'], request: json('x-images', '/v1/images/generations', { model: 'img', prompt: 'p', stream: true }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 1\b/ },
  { name: 'image generation on ch15 with n=2 (note 1)', channel: 'ch15', protocols: ['x-images'], models: ['img'], request: json('x-images', '/v1/images/generations', { model: 'img', prompt: 'p', n: 2 }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 1\b/ },
  { name: 'image generation on ch15 as URL (note 1)', channel: 'ch15', protocols: ['x-images'], models: ['img'], request: json('x-images', '/v1/images/generations', { model: 'img', prompt: 'p', response_format: 'url' }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 1\b/ },
  { name: 'image generation on ch15 within note 1 (C)', channel: 'ch15', protocols: ['x-images'], models: ['img'], request: json('x-images', '/v1/images/generations', { model: 'img', prompt: 'p', n: 1, response_format: 'b64_json' }), status: 400, code: 'conversion_not_available', style: 'completions' },
  { name: 'image edit on ch15 (note 1: no editing)', channel: 'ch15', protocols: ['x-images'], models: ['img'], request: { method: 'POST', path: '/v1/images/edits', protocol: 'x-images', form: imageEditForm('img') }, status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 1\b/ },
  // Note 5: rerank is text only and never streams; rerank is declared `stream: none`, so these
  // check that a client's stream flag is still read for the note's rule.
  { name: 'rerank with stream: true (note 5)', channel: 'ch21', protocols: ['rerank'], models: ['rr'], request: json('rerank', '/v1/rerank', { model: 'rr', query: 'q', documents: ['a', 'b'], stream: true }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 5/ },
  { name: 'rerank of images (note 5)', channel: 'ch21', protocols: ['rerank'], models: ['rr'], request: json('rerank', '/v1/rerank', { model: 'rr', query: 'q', documents: [{ image: 'data:image/png;base64,AAAA' }] }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 5/ },
  // Note 6: token ids on the ch15 chat-style embeddings entry.
  { name: 'token-id embeddings on ch15 (note 6)', channel: 'ch15', protocols: ['x-chat-embeddings'], models: ['emb'], request: json('x-chat-embeddings', '/v1/embeddings', { model: 'emb', input: [1, 2, 3] }), status: 400, code: 'restricted_by_channel_note', style: 'completions', message: /note 6/ },
  // The key's protocol list (spec section 5 item 8; notes 4 and 5).
  { name: 'alpha search without x-responses', channel: 'ch31', protocols: ['rerank', 'x-completions'], models: ['s'], request: json('x-responses', '/v1/alpha/search', { model: 's', query: 'q' }), status: 403, code: 'protocol_not_allowed', style: 'completions' },
  { name: 'rerank without rerank', channel: 'ch21', protocols: ['x-responses', 'x-completions'], models: ['rr'], request: json('rerank', '/v1/rerank', { model: 'rr', query: 'q', documents: ['a'] }), status: 403, code: 'protocol_not_allowed', style: 'completions' },
  { name: 'messages without x-messages', channel: 'ch14', protocols: ['x-completions'], models: ['m'], request: json('x-messages', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }), status: 403, code: 'protocol_not_allowed', style: 'messages' },
  { name: 'embedContent without x-embeddings (x-generate is not enough)', channel: 'ch15', protocols: ['x-generate'], models: ['e'], request: json('x-embeddings', '/v1beta/models/e:embedContent', { content: { parts: [] } }), status: 403, code: 'protocol_not_allowed', style: 'generate' },
  { name: 'x-suite OCR without x-suite', channel: 'ch03', protocols: ['x-completions'], models: ['ocr'], request: json('x-suite', '/v1/ocr', { model: 'ocr', document: {} }), status: 403, code: 'protocol_not_allowed', style: 'completions' },
  // The key itself.
  { name: 'disabled key', channel: 'ch02', protocols: ['x-completions'], key: { enabled: false }, models: ['m'], request: json('x-completions', '/v1/chat/completions', { model: 'm', messages: [] }), status: 403, code: 'access_key_disabled', style: 'completions' },
  { name: 'expired key', channel: 'ch14', protocols: ['x-messages'], key: { expires_at: new Date(Date.now() - 60_000).toISOString() }, models: ['m'], request: json('x-messages', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }), status: 403, code: 'access_key_expired', style: 'messages' },
  { name: 'expired key (generate style)', channel: 'ch15', protocols: ['x-generate'], key: { expires_at: new Date(Date.now() - 60_000).toISOString() }, models: ['m'], request: json('x-generate', '/v1beta/models/m:generateContent', { contents: [] }), status: 403, code: 'access_key_expired', style: 'generate' },
  { name: 'model not visible to the key', channel: 'ch02', protocols: ['x-completions'], key: { models: ['another'] }, models: ['m'], request: json('x-completions', '/v1/chat/completions', { model: 'm', messages: [] }), status: 404, code: 'model_not_visible', style: 'completions' },
  { name: 'model no group serves', channel: 'ch14', protocols: ['x-messages'], models: ['m'], request: json('x-messages', '/v1/messages', { model: 'unknown', max_tokens: 5, messages: [] }), status: 404, code: 'model_not_visible', style: 'messages' },
];

function fields(values: Record<string, string>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(values)) form.append(name, value);
  return form;
}

function imageEditForm(model: string): FormData {
  const form = new FormData();
  form.append('model', model);
  form.append('prompt', 'make it blue');
  form.append('image', new Blob([Buffer.from([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'a.png');
  return form;
}

async function setup(t: Test): Promise<{ gw: Gateway; upstream: Upstream }> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  return { gw, upstream };
}


for (const c of CASES) {
  t.test(`refused before any upstream call: ${c.name}`, async (t) => {
    const { gw, upstream } = await setup(t);
    await seedGroup(gw.store, { channel: c.channel, baseUrl: upstream.url, models: (c.models ?? []).map((m) => ({ external: m, upstream: `up-${m}` })), secrets: ['sk-upstream-refusal'] });
    const { keyValue } = await createKey(gw.store, { protocols: c.protocols, ...c.key });
    const init: RequestInit = { method: c.request.method, headers: clientAuthHeaders(c.request.protocol, keyValue) };
    if (c.request.form) init.body = c.request.form;
    else if (c.request.body !== undefined || c.request.raw !== undefined) {
      init.body = c.request.raw ?? JSON.stringify(c.request.body);
      init.headers = { ...clientAuthHeaders(c.request.protocol, keyValue), 'content-type': 'application/json' };
    }
    const res = await fetch(`${gw.url}${c.request.path}`, init);
    const body: unknown = await res.json();
    t.equal(res.status, c.status, 'status', { body });
    t.match(res.headers.get('content-type'), /application\/json/);
    checkErrorShape(t, body, c.style, c.status, c.code, c.message);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: c.status, error_code: c.code, attempt_count: 0, credential_id: null, ...(c.operation ? { operation: c.operation } : {}) }, 'log record');
    t.same(upstream.requests, [], 'the upstream received nothing');
  });
}

t.test('no key, an unknown key, and a key in the wrong header are refused with 401 in the client protocol', async (t) => {
  const { gw, upstream } = await setup(t);
  await seedGroup(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], secrets: ['sk-upstream-refusal'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-messages'] });
  const body = JSON.stringify({ model: 'm', max_tokens: 5, messages: [] });
  // A valid key where no SDK of decisions.md §2 puts it: Azure's api-key header, and Basic credentials.
  for (const headers of [{ 'api-key': keyValue }, { authorization: `Basic ${keyValue}` }] as Record<string, string>[]) {
    const wrong = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
    t.equal(wrong.status, 401, `valid key in ${Object.keys(headers)[0]}`);
    checkErrorShape(t, await wrong.json(), 'messages', 401, 'access_key_invalid');
  }
  const none = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.equal(none.status, 401);
  checkErrorShape(t, await none.json(), 'messages', 401, 'access_key_invalid');
  const unknown = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'sk-not-a-key', 'content-type': 'application/json' }, body });
  t.equal(unknown.status, 401);
  checkErrorShape(t, await unknown.json(), 'messages', 401, 'access_key_invalid');
  const generate = await fetch(`${gw.url}/v1beta/models/m:generateContent?key=sk-not-a-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(generate.status, 401);
  checkErrorShape(t, await generate.json(), 'generate', 401, 'access_key_invalid');
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('not refused on ch31: a trailing-slash retrieval or cancellation is that operation, sent to the credential that created the response', async (t) => {
  // Note 3: ch31 supports retrieval and cancellation; a response lives with the Group and
  // credential that created it, whatever the spelling of its path.
  const make = (name: string) =>
    startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.method === 'POST' && req.url === '/v1/responses' ? { id: `resp_${name}`, object: 'response' } : { served_by: name }));
    });
  const left = await make('left');
  const right = await make('right');
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await left.close();
    await right.close();
  });
  for (const upstream of [left, right]) await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], secrets: ['sk-upstream-ch31'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = { ...clientAuthHeaders('x-responses', keyValue), 'content-type': 'application/json' };
  const created = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'm', input: 'hi' }) });
  const { id } = (await created.json()) as { id: string };
  const owner = id === 'resp_left' ? left : right;
  const other = owner === left ? right : left;
  const calls: [string, string, string, string][] = [
    // Eight reads: a retrieval that were not sent to the response's owner would still reach it
    // by the weighted choice between the two Groups, but all eight times only once in 256.
    ...Array.from({ length: 8 }, () => ['GET', `/v1/responses/${id}/`, 'responses-retrieve', `/v1/responses/${id}`] as [string, string, string, string]),
    ['POST', `/v1/responses/${id}/cancel/`, 'responses-cancel', `/v1/responses/${id}/cancel`],
  ];
  for (const [method, path, operation, forwarded] of calls) {
    const res = await fetch(`${gw.url}${path}`, { method, headers });
    t.equal(res.status, 200, `${method} ${path}`);
    t.same(await res.json(), { served_by: owner === left ? 'left' : 'right' }, 'answered by the upstream that created the response');
    t.equal(owner.requests.at(-1)?.url, forwarded, 'forwarded without the extra slash');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, operation, protocol: 'x-responses' }, `logged as ${operation}`);
  }
  t.equal(owner.requests.length, 1 + calls.length, 'create and every later call on the owning upstream');
  t.same(other.requests, [], 'none on the other');
});

t.test('a known path with another method is 405 with an Allow header naming the methods it takes', async (t) => {
  const { gw, upstream } = await setup(t);
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'up-m' }], secrets: ['sk-upstream-refusal'] });
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-messages', 'x-completions'] });
  // decisions.md §2: messages and chat completions are POST only.
  for (const [method, path, protocol, allowed, operation] of [
    ['GET', '/v1/messages', 'x-messages', ['POST'], 'messages-create'],
    ['DELETE', '/v1/chat/completions', 'x-completions', ['POST'], 'chat-completions'],
  ] as const) {
    const res = await fetch(`${gw.url}${path}`, { method, headers: clientAuthHeaders(protocol, keyValue) });
    const body: unknown = await res.json();
    t.equal(res.status, 405, `${method} ${path}`);
    t.same(res.headers.get('allow')?.split(', ').sort(), allowed, `${method} ${path}: Allow`);
    checkErrorShape(t, body, protocol === 'x-messages' ? 'messages' : 'completions', 405, 'method_not_allowed');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 405, error_code: 'method_not_allowed', attempt_count: 0, access_key_id: key.id, protocol, operation }, 'the record names the key and the endpoint of that path');
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test("a 405 answers in its endpoint's protocol's shape, whichever other SDK's headers or key location the request carries", async (t) => {
  const { gw, upstream } = await setup(t);
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite', 'decisions', 'x-chat-embeddings', 'x-embeddings'] });
  // Each endpoint's other refusals (a bad key, a bad body) answer in its own shape: its 405 must too,
  // as the upgrade handler's 405 of the same realtime path already does.
  for (const [method, path, headers, style] of [
    ['GET', `/v1/decisions?key=${keyValue}`, {}, 'completions'],
    ['OPTIONS', `/v1/audio/transcriptions/realtime?model=m&key=${keyValue}`, {}, 'completions'],
    ['GET', '/v1/ocr', { 'x-goog-api-key': keyValue }, 'completions'],
    ['GET', '/v1/embeddings', { authorization: `Bearer ${keyValue}`, 'anthropic-version': '2023-06-01' }, 'completions'],
    ['GET', '/v1beta/models/m:embedContent', { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01' }, 'generate'],
    // A model list's shape is the request's choice, its 405's too.
    ['POST', '/v1/models', { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01' }, 'messages'],
  ] as const) {
    const res = await fetch(`${gw.url}${path}`, { method, headers });
    t.equal(res.status, 405, `${method} ${path}`);
    checkErrorShape(t, await res.json(), style, 405, 'method_not_allowed');
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a path no endpoint has is 404, and its record names the key that called it', async (t) => {
  const { gw, upstream } = await setup(t);
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/no-such-endpoint`, { headers: clientAuthHeaders('x-completions', keyValue) });
  t.equal(res.status, 404);
  checkErrorShape(t, await res.json(), 'completions', 404, 'route_not_found');
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 404, error_code: 'route_not_found', access_key_id: key.id });
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a request that names no model is 400 model_missing before any upstream call, also one the OpenAI API would take without it', async (t) => {
  const { gw, upstream } = await setup(t);
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses', 'x-completions'] });
  const bodies = [
    { path: '/v1/responses', body: { input: 'hi', previous_response_id: 'resp_1' } },
    { path: '/v1/responses', body: { prompt: { id: 'pmpt_1' } } },
    { path: '/v1/chat/completions', body: { model: 7, messages: [] } },
  ];
  for (const { path, body } of bodies) {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...clientAuthHeaders('x-responses', keyValue), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    t.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
    checkErrorShape(t, await res.json(), 'completions', 400, 'model_missing');
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test("a model retrieve refused for its key names the model in its record, as an operation's refusal does", async (t) => {
  const { gw, upstream } = await setup(t);
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'vis', upstream: 'up-vis' }], secrets: ['sk-upstream-refusal'] });
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-generate'], enabled: false });
  const res = await fetch(`${gw.url}/v1beta/models/vis`, { headers: clientAuthHeaders('x-generate', keyValue) });
  t.equal(res.status, 403);
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { error_code: 'access_key_disabled', access_key_id: key.id, external_model: 'vis' });
  const unknown = await fetch(`${gw.url}/v1beta/models/vis`, { headers: clientAuthHeaders('x-generate', 'sy-not-a-key-0000000000000000') });
  t.equal(unknown.status, 401);
  t.match(await waitForLog(gw, unknown.headers.get('x-switchyard-request-id')), { error_code: 'access_key_invalid', external_model: 'vis' });
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a refusal on an endpoint with the model in its path names that model in its record', async (t) => {
  const { gw, upstream } = await setup(t);
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'vis', upstream: 'up-vis' }], secrets: ['sk-upstream-refusal'] });
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1beta/models/vis:generateContent`, { method: 'POST', headers: { ...clientAuthHeaders('x-generate', keyValue), 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(res.status, 403);
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { error_code: 'protocol_not_allowed', access_key_id: key.id, external_model: 'vis' });
});

t.test('HEAD of a model list is its GET without the body; HEAD of a forwarded GET endpoint is 405', async (t) => {
  const { gw, upstream } = await setup(t);
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'up-m' }], secrets: ['sk-upstream-refusal'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions', 'x-responses'] });
  const headers = clientAuthHeaders('x-completions', keyValue);
  const get = await fetch(`${gw.url}/v1/models`, { headers });
  const listed = await get.text();
  const head = await fetch(`${gw.url}/v1/models`, { method: 'HEAD', headers });
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(Buffer.byteLength(listed)), 'the length of the list GET answers');
  t.match(head.headers.get('content-type'), /application\/json/);
  t.equal(await head.text(), '', 'no body');
  t.match(await waitForLog(gw, head.headers.get('x-switchyard-request-id')), { status: 200, protocol: 'models' });
  // RFC 9110 §10.2.1: Allow names every method the resource takes, HEAD included.
  for (const [method, path] of [['POST', '/v1/models'], ['OPTIONS', '/v1/models/m'], ['DELETE', '/v1beta/models/m']] as const) {
    const refused = await fetch(`${gw.url}${path}`, { method, headers });
    t.equal(refused.status, 405, `${method} ${path}`);
    t.same(refused.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD'], `${method} ${path}: Allow names HEAD too`);
  }
  const forwarded = await fetch(`${gw.url}/x-suite/v1/audio/voices`, { method: 'HEAD', headers: clientAuthHeaders('x-suite', keyValue) });
  t.equal(forwarded.status, 405, 'an upstream need not take HEAD');
  t.match(forwarded.headers.get('allow'), /GET/);
  t.same(upstream.requests, [], 'the upstream received nothing');
});
