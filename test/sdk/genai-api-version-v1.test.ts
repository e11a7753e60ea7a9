import t from 'tap';
import { ApiError, GoogleGenAI } from '@google/genai';
import { routeTable, matchResourceName, matchRoute } from '../../src/handlers/compile-route-table.ts';
import OpenAI, { NotFoundError as OpenAINotFoundError } from 'openai';
import { startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { generateResponse, rig, writeJson } from './helpers/vendor-wire.ts';

// The @google/genai SDK set to `apiVersion: 'v1'` (docs/data-plane.md, "Model lists" and
// "Errors"): generate-style endpoints are served only under /v1beta (decisions.md §2), so its
// calls get a typed 404 that says where they are; its model list at /v1/models answers in the
// generate shape it reads (it sends x-goog-api-client and x-goog-api-key).

const ROUTE = { channel: 'ch15', protocols: ['x-generate', 'x-embeddings'], external: 'team-gen', upstreamModel: 'vendor-gen-1' };

function v1(url: string, apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url, apiVersion: 'v1' } });
}

/** genai puts the response body, as JSON text, in the ApiError message. */
function bodyOf(err: unknown): { error?: { code?: number; status?: string; message?: string; details?: { reason?: string }[] } } {
  const text = (err as Error).message;
  return JSON.parse(text.slice(text.indexOf('{'))) as ReturnType<typeof bodyOf>;
}

t.test('generate-style calls under /v1: ApiError 404 route_not_found naming /v1beta, nothing upstream, no models-retrieve record', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 200, generateResponse('vendor-gen-1', 'hi')));
  const c = v1(r.gw.url, r.keyValue);
  const calls: [string, () => Promise<unknown>][] = [
    ['generateContent', () => c.models.generateContent({ model: 'team-gen', contents: 'hi' })],
    ['streamGenerateContent', () => c.models.generateContentStream({ model: 'team-gen', contents: 'hi' })],
    ['countTokens', () => c.models.countTokens({ model: 'team-gen', contents: 'hi' })],
    ['embedContent', () => c.models.embedContent({ model: 'team-gen', contents: 'hi' })],
    ['a model name with a slash', () => c.models.generateContent({ model: 'org/team-gen', contents: 'hi' })],
  ];
  for (const [what, call] of calls) {
    const err = await call().catch((e: unknown) => e);
    t.type(err, ApiError, what);
    t.equal((err as ApiError).status, 404, `${what}: status`);
    const body = bodyOf(err);
    t.match(body, { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'route_not_found' }] } }, `${what}: generate error shape`);
    t.match(body.error?.message, /served under \/v1beta, not \/v1/, `${what}: says where it is served`);
  }
  t.same(r.upstream.requests, [], 'the upstream received nothing');
  await r.gw.logs.flush();
  const records = (await r.gw.logs.list({}, { limit: 20 })).items;
  t.equal(records.length, calls.length);
  for (const record of records) t.match(record, { status: 404, error_code: 'route_not_found', operation: '' }, 'recorded as an unknown endpoint');
});

t.test('genai models.list() and models.get() under /v1: the visible models in the generate shape', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const c = v1(r.gw.url, r.keyValue);
  const names: string[] = [];
  for await (const model of await c.models.list()) names.push(String(model.name));
  t.same(names, ['models/team-gen']);
  const model = await c.models.get({ model: 'team-gen' });
  t.equal(model.name, 'models/team-gen');
  t.equal(model.displayName, 'team-gen');
  const hidden = await c.models.get({ model: 'team-other' }).catch((e: unknown) => e);
  t.type(hidden, ApiError);
  t.equal((hidden as ApiError).status, 404);
  t.match(bodyOf(hidden), { error: { status: 'NOT_FOUND', details: [{ reason: 'model_not_visible' }] } });
  t.same(r.upstream.requests, [], 'no upstream was asked');
});

t.test('/v1/models: completions shape by default, messages with anthropic-version (even beside a genai header)', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const list = async (headers: Record<string, string>) => (await fetch(`${r.gw.url}/v1/models`, { headers })).json();
  t.match(await list({ authorization: `Bearer ${r.keyValue}` }), { object: 'list', data: [{ id: 'team-gen', object: 'model' }] });
  t.match(await list({ 'x-goog-api-key': r.keyValue }), { models: [{ name: 'models/team-gen' }] });
  t.match(await list({ authorization: `Bearer ${r.keyValue}`, 'x-goog-api-client': 'google-genai-sdk/1' }), { models: [{ name: 'models/team-gen' }] });
  t.match(await list({ 'x-api-key': r.keyValue, 'anthropic-version': '2023-06-01', 'x-goog-api-client': 'google-genai-sdk/1' }), { data: [{ type: 'model', id: 'team-gen' }], has_more: false });
});

t.test('route matching: the route that names more of the path wins across first segments', async (t) => {
  const routes = routeTable();
  const at = (method: string, path: string) => matchRoute(routes, method, path);
  t.match(at('POST', '/v1/models/m:generateContent'), { found: false, allowed: [], servedUnder: '/v1beta', near: { kind: 'operation', operation: { id: 'generate-content' } } });
  t.match(at('POST', '/v1/models/org/m:batchEmbedContents'), { found: false, servedUnder: '/v1beta', near: { operation: { id: 'batch-embed-contents' } } });
  // A path this segment takes by another method, named as exactly: still that endpoint's 405.
  t.match(at('GET', '/v1beta/models/m:generateContent'), { found: false, allowed: ['POST'], servedUnder: undefined });
  t.match(at('POST', '/v1/models/m'), { found: false, allowed: ['GET'], servedUnder: undefined });
  // Near models.retrieve here as near models.get under /v1beta: it stays here, and is
  // models.retrieve's resource name for a request in generate shape (matchResourceName).
  t.match(at('GET', '/v1/models/a/b'), { found: false, servedUnder: undefined, near: { kind: 'model_list', list: { id: 'models-retrieve' } } });
  t.match(matchResourceName(routes, 'GET', '/v1/models/a/b'), { found: true, target: { kind: 'model_list', list: { id: 'models-retrieve' } }, params: { model: 'a/b' } });
  t.equal(matchResourceName(routes, 'POST', '/v1/models/a/b'), undefined);
  t.equal(matchResourceName(routes, 'GET', '/v1beta/models/a/b'), undefined, 'generate-style lists span segments in their own pattern');
  t.match(at('GET', '/v1/models/m:generateContent'), { found: true, params: { model: 'm:generateContent' } });
});

t.test('genai models.get() under /v1 of a name with a slash: the rest of the path is the model, for the genai SDK only', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => writeJson(res, 500, {}));
  await gw.store.groups.create({ name: 'g', channel: 'ch15', base_url: upstream.url, models: ['org/name', 'plain'].map((external) => ({ external, upstream: 'u' })) });
  const key = (await gw.store.accessKeys.create({ name: 'k', protocols: ['x-generate'] })).value;
  const c = v1(gw.url, key);
  const names: string[] = [];
  for await (const model of await c.models.list()) names.push(String(model.name));
  t.same(names, ['models/org/name', 'models/plain']);
  // What the list shows is what models.get takes back, with or without the `models/` prefix.
  for (const name of [...names, 'org/name']) t.equal((await c.models.get({ model: name })).name, name.startsWith('models/') ? name : `models/${name}`, name);
  const hidden = await c.models.get({ model: 'models/org/other' }).catch((e: unknown) => e);
  t.match(bodyOf(hidden), { error: { code: 404, details: [{ reason: 'model_not_visible' }] } });

  // To other clients a path past one segment is no endpoint, as before; their SDKs encode the slash.
  const plain = await fetch(`${gw.url}/v1/models/org/name`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(plain.status, 404);
  t.match(await plain.json(), { error: { code: 'route_not_found' } });
  const msg = await fetch(`${gw.url}/v1/models/org/name`, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
  t.match(await msg.json(), { type: 'error', error: { code: 'route_not_found' } });
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  t.equal((await openai.models.retrieve('org/name')).id, 'org/name', 'openai models.retrieve sends org%2Fname');
  t.type(await openai.models.retrieve('org/other').catch((e: unknown) => e), OpenAINotFoundError);
  const head = await fetch(`${gw.url}/v1/models/org/name`, { method: 'HEAD', headers: { 'x-goog-api-key': key } });
  t.equal(head.status, 200, 'HEAD is its GET');
  t.same(upstream.requests, [], 'no upstream was asked');
});
