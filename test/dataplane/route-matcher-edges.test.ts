import t from 'tap';
import { MODEL_LISTS, OPERATION_IDS, OPERATIONS } from '../../src/generated/index.ts';
import { MODEL_FIELD_BYTES } from '../../src/dataplane/body/index.ts';
import { routeTable, matchRoute } from '../../src/handlers/compile-route-table.ts';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, HTTP_OPERATIONS, rawRequest, waitForLog } from './helpers/dataplane-scenarios.ts';

// Edges of route matching (docs/data-plane.md, "Routes"): which endpoint a path is, and what
// the record of a request refused there says.

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** The values the test puts in each path parameter; a path-model operation's record names `model`'s. */
const PARAMS: Record<string, string> = { model: 'gem', response_id: 'resp_1', voice_id: 'voice_1' };
const QUERY_MODEL = 'qm';

/** Every endpoint in the generated table's order. */
const templates = [...OPERATION_IDS.map((id) => ({ ...OPERATIONS[id], protocol: OPERATIONS[id].protocol as string })), ...MODEL_LISTS.map((list) => ({ ...list, protocol: 'models' }))];
/** Namespaces an `ANY` endpoint takes every method under (`/v1/responses/{rest*}`): their named endpoints have a test of their own below. */
const anyPrefixes = templates.filter((e) => e.method === 'ANY').map((e) => e.path.slice(0, e.path.indexOf('{')));

function concrete(template: string): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => PARAMS[name] ?? 'x');
}

/** A method no endpoint declares on this template (the path is that endpoint's under another method). */
function otherMethod(template: string): string | undefined {
  const taken = new Set<string>(templates.filter((e) => e.path === template).map((e) => e.method));
  return METHODS.find((m) => !taken.has(m));
}

t.test('a method an endpoint does not take: 405, and the record names that endpoint and the model its path or query names', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const targets = [
    ...HTTP_OPERATIONS.filter((op) => op.method !== 'ANY').map((op) => ({ path: op.path, protocol: op.protocol as string, operation: op.id as string, model: op.model === 'path' ? PARAMS['model']! : op.model === 'query' ? QUERY_MODEL : null })),
    ...MODEL_LISTS.map((list) => ({ path: list.path, protocol: 'models', operation: list.id, model: list.answers === 'model' ? PARAMS['model']! : null })),
  ].filter((e) => !anyPrefixes.some((prefix) => e.path.startsWith(prefix)));
  t.ok(targets.some((e) => e.path.includes('}:')), 'generate-style endpoints are among them');
  for (const e of targets) {
    const method = otherMethod(e.path)!;
    const path = concrete(e.path);
    const res = await rawRequest(`${gw.url}${path}?model=${QUERY_MODEL}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
    const what = `${method} ${path} (${e.operation})`;
    t.equal(res.status, 405, `${what}: status`);
    const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
    // Endpoints that share a path (voices retrieve, update, delete): the record names the first declared.
    const first = templates.find((x) => x.path === e.path)!;
    t.equal(first.protocol, e.protocol, `${what}: endpoints that share a path share a protocol`);
    t.match(record, { status: 405, error_code: 'method_not_allowed', protocol: e.protocol, operation: first.id }, `${what}: record names the endpoint`);
    t.equal(record.external_model, e.model, `${what}: external_model`);
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a 405 whose path model is over the model-name cap stays a 405, its record without the model', async (t) => {
  const { gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.end('{}');
  });
  const res = await rawRequest(`${gw.url}/v1beta/models/${'m'.repeat(2000)}:embedContent`, { method: 'GET', headers: {} });
  t.equal(res.status, 405);
  t.equal(res.headers['allow'], 'POST');
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  const embed = Object.values(OPERATIONS).find((op) => op.path.endsWith('}:embedContent'))!;
  t.match(record, { protocol: embed.protocol, operation: embed.id, external_model: null });
});

t.test('a one-segment parameter with no :verb after it takes colons; a generate-style model still stops at the last :verb', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await gw.store.groups.create({ name: 'chat', channel: 'ch02', base_url: upstream.url, models: [{ external: 'llama3:8b', upstream: 'up-llama' }] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions', 'x-generate'] });
  const got = await rawRequest(`${gw.url}/v1/models/llama3:8b`, { method: 'GET', headers: clientAuthHeaders('x-completions', keyValue) });
  t.equal(got.status, 200);
  t.match(JSON.parse(got.body.toString()), { id: 'llama3:8b', object: 'model' });
  t.match(await waitForLog(gw, got.headers['x-switchyard-request-id'] as string), { protocol: 'models', operation: 'models-retrieve', external_model: 'llama3:8b' });
  // Another method on it is models-retrieve's 405, with the whole name.
  const posted = await rawRequest(`${gw.url}/v1/models/llama3:8b`, { method: 'POST', headers: clientAuthHeaders('x-completions', keyValue), body: '{}' });
  t.equal(posted.status, 405);
  t.match(await waitForLog(gw, posted.headers['x-switchyard-request-id'] as string), { protocol: 'models', operation: 'models-retrieve', external_model: 'llama3:8b' });
  // A generate-style model keeps its colons up to the last :verb (a 405: no Group is needed to name it).
  const generate = Object.values(OPERATIONS).find((op) => op.path.endsWith('}:generateContent'))!;
  const wrongMethod = await rawRequest(`${gw.url}/v1beta/models/x:y:generateContent`, { method: 'GET', headers: clientAuthHeaders('x-generate', keyValue) });
  t.equal(wrongMethod.status, 405);
  t.match(await waitForLog(gw, wrongMethod.headers['x-switchyard-request-id'] as string), { protocol: generate.protocol, operation: generate.id, external_model: 'x:y' });
  t.same(upstream.requests, []);
});

t.test('a generate-style :verb no route declares is an unknown endpoint (404), not a 405 of models.get, and its record names no model', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  // The genai SDK's batches.create and generateVideos, and a verb no one has.
  for (const verb of ['batchGenerateContent', 'predictLongRunning', 'frobnicate']) {
    const res = await rawRequest(`${gw.url}/v1beta/models/gem:${verb}`, { method: 'POST', headers: clientAuthHeaders('x-generate', keyValue), body: '{}' });
    t.equal(res.status, 404, `${verb}: status`);
    t.match(JSON.parse(res.body.toString()), { error: { code: 404, status: 'NOT_FOUND' } }, `${verb}: Google's error shape`);
    t.equal(res.headers['allow'], undefined, `${verb}: no Allow naming models.get's methods`);
    const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
    t.match(record, { status: 404, error_code: 'route_not_found', external_model: null }, `${verb}: the record`);
  }
  // A declared verb by another method stays its endpoint's 405.
  const declared = await rawRequest(`${gw.url}/v1beta/models/gem:generateContent`, { method: 'GET', headers: clientAuthHeaders('x-generate', keyValue) });
  t.equal(declared.status, 405);
  t.same(upstream.requests, []);
});

t.test('a declared generate-style :verb with an empty model is its endpoint\'s 400 model_missing, not a 405 of models.get', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate', 'x-embeddings'] });
  // `models/${model}:embedContent` built by hand with the model left empty: the endpoint is
  // named, only its model is missing (an `Allow: GET, HEAD` would say the verb takes no POST).
  for (const [verb, operation, protocol] of [
    ['embedContent', 'embed-content', 'x-embeddings'],
    ['batchEmbedContents', 'batch-embed-contents', 'x-embeddings'],
    ['generateContent', 'generate-content', 'x-generate'],
    ['countTokens', 'count-tokens', 'x-generate'],
  ] as const) {
    const res = await rawRequest(`${gw.url}/v1beta/models/:${verb}`, { method: 'POST', headers: { ...clientAuthHeaders(protocol, keyValue), 'content-type': 'application/json' }, body: '{}' });
    t.equal(res.status, 400, `${verb}: status`);
    t.match(JSON.parse(res.body.toString()), { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'model_missing' }] } }, `${verb}: Google's error shape`);
    t.equal(res.headers['allow'], undefined, `${verb}: no Allow naming models.get's methods`);
    const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
    t.match(record, { status: 400, error_code: 'model_missing', protocol, operation, external_model: null }, `${verb}: the record`);
  }
  // Still no model list entry of the empty name, nor a doubled slash read as one.
  const list = await rawRequest(`${gw.url}/v1beta/models/`, { method: 'GET', headers: clientAuthHeaders('x-generate', keyValue) });
  t.equal(list.status, 200, 'a trailing slash is the list');
  t.ok(Array.isArray(JSON.parse(list.body.toString()).models), 'the list');
  const doubled = await rawRequest(`${gw.url}/v1beta/models//gem:embedContent`, { method: 'POST', headers: { ...clientAuthHeaders('x-embeddings', keyValue), 'content-type': 'application/json' }, body: '{}' });
  t.match(await waitForLog(gw, doubled.headers['x-switchyard-request-id'] as string), { operation: 'embed-content', external_model: 'gem' }, 'a doubled slash is respelled, its model kept');
  t.same(upstream.requests, []);
});

t.test('a model list retrieve of a name over the model-name cap: 400, its record without the name', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await gw.store.groups.create({ name: 'chat', channel: 'ch02', base_url: upstream.url, models: [{ external: 'm', upstream: 'u' }] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const long = 'a'.repeat(MODEL_FIELD_BYTES + 1);
  const res = await rawRequest(`${gw.url}/v1/models/${long}`, { method: 'GET', headers: clientAuthHeaders('x-completions', keyValue) });
  t.equal(res.status, 400);
  // Named in the path: the path parameter's refusal, not the body's.
  t.match(JSON.parse(res.body.toString()), { error: { code: 'invalid_path_parameter', message: /model name is longer than 1024 bytes/ } });
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  t.match(record, { protocol: 'models', operation: 'models-retrieve', status: 400, external_model: null });
  t.notOk(JSON.stringify(record).includes(long), 'the name is not logged');
});

t.test('an N/C route refused with conversion_not_available records route_mode and effective', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  // ch18 generate is N/C (spec matrix): gemini-* native, any other model converted, and the gateway has no conversion.
  await gw.store.groups.create({ name: 'vertex', channel: 'ch18', base_url: upstream.url, models: [{ external: 'gemini-2.0-flash', upstream: 'gemini-2.0-flash' }, { external: 'claude-3-5-sonnet', upstream: 'claude-3-5-sonnet@20240620' }] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await rawRequest(`${gw.url}/v1beta/models/claude-3-5-sonnet:generateContent`, { method: 'POST', headers: { ...clientAuthHeaders('x-generate', keyValue), 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(res.status, 400);
  t.match(JSON.parse(res.body.toString()), { error: { details: [{ reason: 'conversion_not_available' }] } });
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  t.match(record, { error_code: 'conversion_not_available', external_model: 'claude-3-5-sonnet', route_mode: 'N/C', effective: 'converted', attempt_count: 0 });
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a refusal record carries the route of the Group refusing, not of a disabled or hidden one before it', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const model = { external: 'claude-3-5-sonnet', upstream: 'claude-3-5-sonnet' };
  // ch33's generate route is native (spec matrix): a higher Group the key cannot use must not lend the record its N.
  const vertex = await gw.store.groups.create({ name: 'vertex', channel: 'ch18', base_url: upstream.url, priority: 1, models: [model] });
  const disabled = await gw.store.groups.create({ name: 'off', channel: 'ch33', base_url: upstream.url, priority: 10, enabled: false, models: [model] });
  await gw.store.groups.create({ name: 'hidden', channel: 'ch33', base_url: upstream.url, priority: 20, models: [model] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'], groups: [vertex.id, disabled.id] });
  const res = await rawRequest(`${gw.url}/v1beta/models/claude-3-5-sonnet:generateContent`, { method: 'POST', headers: { ...clientAuthHeaders('x-generate', keyValue), 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(res.status, 400);
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  t.match(record, { error_code: 'conversion_not_available', route_mode: 'N/C', effective: 'converted' });
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a named endpoint inside a passthrough namespace, by a method it does not take: 405 with Allow, not the passthrough', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const routes = routeTable();
  const named = HTTP_OPERATIONS.filter((op) => op.method !== 'ANY' && anyPrefixes.some((prefix) => op.path.startsWith(prefix)));
  t.ok(named.some((op) => op.id === 'responses-retrieve'), 'retrieval is among them');
  for (const op of named) {
    for (const spelled of [concrete(op.path), `${concrete(op.path)}/`]) {
      // HEAD too: a forwarded GET endpoint is 405 for it (an upstream need not take HEAD).
      for (const method of ['HEAD', 'PUT', 'PATCH', 'OPTIONS']) {
        const what = `${method} ${spelled} (${op.id})`;
        const match = matchRoute(routes, method, spelled);
        t.notOk(match.found, `${what}: not matched`);
        if (match.found) continue;
        t.ok(match.allowed.includes(op.method), `${what}: Allow names ${op.method}`);
        const res = await rawRequest(`${gw.url}${spelled}`, { method, headers: {} });
        t.equal(res.status, 405, `${what}: status`);
        t.ok(String(res.headers['allow']).split(', ').includes(op.method), `${what}: Allow header`);
        const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
        t.match(record, { error_code: 'method_not_allowed', protocol: op.protocol }, `${what}: record`);
        t.not(record.operation, 'responses-namespace', `${what}: not the passthrough`);
      }
    }
  }
  // Paths no named endpoint takes, by any method, are still the passthrough's.
  for (const [method, spelled] of [['HEAD', '/v1/responses/vendor-ext/state'], ['PUT', '/v1/responses/vendor-ext/item/7'], ['POST', '/v1/responses/resp_1/CANCEL'], ['GET', '/v1/responses/resp_1/extra/input_items']]) {
    const match = matchRoute(routes, method!, spelled!);
    t.ok(match.found && match.target.kind === 'operation' && match.target.operation.id === 'responses-namespace', `${method} ${spelled}: the passthrough`);
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});
