import t, { type Test } from 'tap';
import OpenAI, { AuthenticationError as OpenAIAuthenticationError, NotFoundError as OpenAINotFoundError } from 'openai';
import Anthropic, { AuthenticationError as AnthropicAuthenticationError, NotFoundError as AnthropicNotFoundError } from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { logOf } from './helpers/vendor-wire.ts';

// Data-plane model lists (note 12) through each official SDK: the configured models visible
// to the calling key, in the shape the SDK pages through, and never an upstream request.

async function setup(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(500);
    res.end();
  });
  const groups = gw.store.groups;
  const chat = await groups.create({ name: 'chat', channel: 'ch02', base_url: upstream.url, models: [{ external: 'team-b', upstream: 'v-b' }, { external: 'team-a', upstream: 'v-a' }] });
  const msg = await groups.create({ name: 'msg', channel: 'ch14', base_url: upstream.url, models: [{ external: 'team-c', upstream: 'v-c' }, { external: 'team-a', upstream: 'v-a2' }] });
  await groups.create({ name: 'gen', channel: 'ch15', base_url: upstream.url, models: [{ external: 'team-d', upstream: 'v-d' }] });
  const off = await groups.create({ name: 'off', channel: 'ch02', base_url: upstream.url, enabled: false, models: [{ external: 'team-hidden', upstream: 'v-h' }] });
  for (const g of [chat, msg, off]) await gw.store.credentials.createMany(g.id, [{ kind: 'api_key', values: { api_key: 'sk-up' }, secretFields: ['api_key'] }]);
  // Sees the chat and msg Groups (and the disabled one): team-a, team-b, team-c.
  const scoped = await gw.store.accessKeys.create({ name: 'scoped', protocols: ['x-completions', 'x-messages', 'x-generate'], groups: [chat.id, msg.id, off.id] });
  // Sees every Group but only the models it names.
  const narrow = await gw.store.accessKeys.create({ name: 'narrow', protocols: ['x-completions', 'x-generate'], models: ['team-d', 'team-hidden'] });
  return { gw, upstream, scoped: scoped.value, narrow: narrow.value };
}

t.test('openai models.list(): completions-style list of the visible models', async (t) => {
  const s = await setup(t);
  const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${s.gw.url}/v1`, maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of openai(s.scoped).models.list()) {
    t.equal(model.object, 'model');
    t.type(model.created, 'number');
    t.type(model.owned_by, 'string');
    ids.push(model.id);
  }
  t.same(ids, ['team-a', 'team-b', 'team-c'], 'visible Groups only, each name once, no disabled Group');

  const { data: page, response } = await openai(s.narrow).models.list().withResponse();
  t.same(
    page.data.map((m) => m.id),
    ['team-d'],
    "only the key's own models",
  );
  t.match(await logOf(s.gw, response.headers.get('x-switchyard-request-id')), { protocol: 'models', status: 200 });

  const err = await openai('sk-nope').models.list().catch((e: unknown) => e);
  t.type(err, OpenAIAuthenticationError);
  t.equal((err as OpenAIAuthenticationError).code, 'access_key_invalid');
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('anthropic models.list(): messages-style list (anthropic-version header) of the visible models', async (t) => {
  const s = await setup(t);
  const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: s.gw.url, maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of anthropic(s.scoped).models.list()) {
    t.equal(model.type, 'model');
    t.equal(model.display_name, model.id);
    t.ok(!Number.isNaN(Date.parse(model.created_at)), 'created_at is an RFC 3339 time');
    ids.push(model.id);
  }
  t.same(ids, ['team-a', 'team-b', 'team-c']);

  const page = await anthropic(s.narrow).models.list();
  t.same(
    page.data.map((m) => m.id),
    ['team-d'],
  );
  t.equal(page.has_more, false);
  t.equal(page.hasNextPage(), false);
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

// The anthropic SDK sends `anthropic-version` on GET /v1/models: its refusals must come in the
// messages error shape, as its successes come in the messages list shape.
t.test('anthropic models.list() with a bad key: AuthenticationError in the messages error shape', async (t) => {
  const s = await setup(t);
  const err = await new Anthropic({ apiKey: 'sk-ant-nope', baseURL: s.gw.url, maxRetries: 0 }).models.list().catch((e: unknown) => e);
  t.type(err, AnthropicAuthenticationError);
  t.equal((err as AnthropicAuthenticationError).type, 'authentication_error');
  t.match((err as AnthropicAuthenticationError).error, { type: 'error', error: { type: 'authentication_error', code: 'access_key_invalid' } });
});

t.test('genai models.list(): generate-style list of the visible models', async (t) => {
  const s = await setup(t);
  const genai = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: s.gw.url } });
  const names: (string | undefined)[] = [];
  for await (const model of await genai(s.scoped).models.list()) {
    t.equal(model.displayName, model.name?.replace(/^models\//, ''));
    // Their Groups' channels (ch02, ch14) would convert a generate call, which this version does not carry.
    t.same(model.supportedActions, [], 'the SDK maps supportedGenerationMethods: none is routed for these models');
    names.push(model.name);
  }
  t.same(names, ['models/team-a', 'models/team-b', 'models/team-c']);

  const pager = await genai(s.narrow).models.list();
  t.same(
    pager.page.map((m) => m.name),
    ['models/team-d'],
  );
  t.equal(pager.hasNextPage(), false);

  const err = await genai('AIza-nope').models.list().catch((e: unknown) => e);
  t.type(err, ApiError);
  t.equal((err as ApiError).status, 401);
  t.match((err as ApiError).message, /UNAUTHENTICATED/);
  t.match((err as ApiError).message, /access_key_invalid/);
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

// One model of the list (GET /v1/models/{model}, GET /v1beta/models/{model}): the SDKs'
// models.retrieve / models.get, answered like the list, the model's object as its list entry.
// A model the key cannot see (another Group's, or one it does not name) is a 404 model_not_visible.

t.test('openai models.retrieve(): the visible model as its list entry, else NotFoundError', async (t) => {
  const s = await setup(t);
  const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${s.gw.url}/v1`, maxRetries: 0 });
  const { data: model, response } = await openai(s.scoped).models.retrieve('team-c').withResponse();
  t.match(model, { id: 'team-c', object: 'model', owned_by: String });
  t.type(model.created, 'number');
  t.match(await logOf(s.gw, response.headers.get('x-switchyard-request-id')), { protocol: 'models', operation: 'models-retrieve', external_model: 'team-c', status: 200 });

  for (const [key, name] of [[s.scoped, 'team-d'], [s.narrow, 'team-a'], [s.narrow, 'team-hidden'], [s.scoped, 'no-such-model']] as const) {
    const err = await openai(key).models.retrieve(name).catch((e: unknown) => e);
    t.type(err, OpenAINotFoundError, name);
    t.equal((err as OpenAINotFoundError).code, 'model_not_visible', name);
  }
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('anthropic models.retrieve(): the visible model in the messages shape, else NotFoundError in the messages error shape', async (t) => {
  const s = await setup(t);
  const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: s.gw.url, maxRetries: 0 });
  const model = await anthropic(s.scoped).models.retrieve('team-a');
  t.match(model, { type: 'model', id: 'team-a', display_name: 'team-a' });
  t.ok(!Number.isNaN(Date.parse(model.created_at)), 'created_at is an RFC 3339 time');

  const err = await anthropic(s.narrow).models.retrieve('team-c').catch((e: unknown) => e);
  t.type(err, AnthropicNotFoundError);
  t.match((err as AnthropicNotFoundError).error, { type: 'error', error: { type: 'not_found_error', code: 'model_not_visible' } });
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('genai models.get(): the visible model as its list entry, else a 404 in the generate error shape', async (t) => {
  const s = await setup(t);
  const genai = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: s.gw.url } });
  const model = await genai(s.narrow).models.get({ model: 'team-d' });
  t.equal(model.name, 'models/team-d');
  t.equal(model.displayName, 'team-d');
  t.same(model.supportedActions, ['generateContent', 'countTokens'], 'the SDK maps supportedGenerationMethods: what ch15 serves of the x-generate protocol the key may call');

  const err = await genai(s.scoped).models.get({ model: 'team-d' }).catch((e: unknown) => e);
  t.type(err, ApiError);
  t.equal((err as ApiError).status, 404);
  t.match((err as ApiError).message, /NOT_FOUND/);
  t.match((err as ApiError).message, /model_not_visible/);
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('a path no endpoint takes: generate error shape under /v1beta, messages shape with anthropic-version', async (t) => {
  const s = await setup(t);
  const gen = await fetch(`${s.gw.url}/v1beta/tunedModels/x`, { headers: { 'x-goog-api-key': s.scoped } });
  t.equal(gen.status, 404);
  t.match(await gen.json(), { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'route_not_found' }] } });
  const msg = await fetch(`${s.gw.url}/v1/models/team-a/extra`, { headers: { 'x-api-key': s.scoped, 'anthropic-version': '2023-06-01' } });
  t.equal(msg.status, 404);
  t.match(await msg.json(), { type: 'error', error: { type: 'not_found_error', code: 'route_not_found' } });
  const elsewhere = await fetch(`${s.gw.url}/v1/organizations/me`, { headers: { 'x-api-key': s.scoped, 'anthropic-version': '2023-06-01' } });
  t.match(await elsewhere.json(), { type: 'error', error: { code: 'route_not_found' } });
  const plain = await fetch(`${s.gw.url}/v1/models/team-a/extra`, { headers: { authorization: `Bearer ${s.scoped}` } });
  t.match(await plain.json(), { error: { code: 'route_not_found', param: null } });
});

// Paging (Anthropic `limit` / `after_id` / `before_id`, Google `pageSize` / `pageToken`): pages
// of the visible list in its order (sorted by name), so an SDK walking every page sees each
// visible model once. The openai list takes no paging and stays whole.

async function pagingSetup(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(500);
    res.end();
  });
  const groups = gw.store.groups;
  const one = await groups.create({ name: 'one', channel: 'ch02', base_url: upstream.url, models: [{ external: 'm-e', upstream: 'u' }, { external: 'm-a', upstream: 'u' }, { external: 'm-c', upstream: 'u' }] });
  const two = await groups.create({ name: 'two', channel: 'ch14', base_url: upstream.url, models: [{ external: 'm-d', upstream: 'u' }, { external: 'm-b', upstream: 'u' }] });
  // Names that sort between the visible ones: a Group the key does not have, and a disabled one.
  await groups.create({ name: 'other', channel: 'ch02', base_url: upstream.url, models: [{ external: 'm-bb', upstream: 'u' }] });
  const off = await groups.create({ name: 'off', channel: 'ch02', base_url: upstream.url, enabled: false, models: [{ external: 'm-cc', upstream: 'u' }] });
  const key = await gw.store.accessKeys.create({ name: 'pager', protocols: ['x-completions', 'x-messages', 'x-generate'], groups: [one.id, two.id, off.id] });
  const get = (path: string, headers: Record<string, string>) => fetch(`${gw.url}${path}`, { headers });
  const messages = (query: string) => get(`/v1/models?${query}`, { 'x-api-key': key.value, 'anthropic-version': '2023-06-01' });
  const generate = (query: string) => get(`/v1beta/models?${query}`, { 'x-goog-api-key': key.value });
  return { gw, upstream, key: key.value, messages, generate, visible: ['m-a', 'm-b', 'm-c', 'm-d', 'm-e'] };
}

t.test('anthropic models.list({ limit: 2 }): pages of two, every visible model once over all pages', async (t) => {
  const s = await pagingSetup(t);
  const anthropic = new Anthropic({ apiKey: s.key, baseURL: s.gw.url, maxRetries: 0 });
  const first = await anthropic.models.list({ limit: 2 });
  t.same(first.data.map((m) => m.id), s.visible.slice(0, 2));
  t.equal(first.has_more, true);
  t.ok(first.hasNextPage(), 'a next page exists');

  const pages: string[][] = [];
  for await (const page of first.iterPages()) pages.push(page.data.map((m) => m.id));
  t.same(pages, [s.visible.slice(0, 2), s.visible.slice(2, 4), s.visible.slice(4)], 'pages of at most two, in order');
  const ids: string[] = [];
  for await (const model of anthropic.models.list({ limit: 2 })) ids.push(model.id);
  t.same(ids, s.visible, 'each visible model exactly once, hidden ones never');
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('messages-style list: after_id, before_id and limit as raw query parameters', async (t) => {
  const s = await pagingSetup(t);
  const page = async (query: string) => {
    const res = await s.messages(query);
    t.equal(res.status, 200, query);
    const body = (await res.json()) as { data: { id: string }[]; has_more: boolean; first_id: string | null; last_id: string | null };
    return { ids: body.data.map((m) => m.id), has_more: body.has_more, first_id: body.first_id, last_id: body.last_id };
  };
  t.same(await page('after_id=m-b'), { ids: ['m-c', 'm-d', 'm-e'], has_more: false, first_id: 'm-c', last_id: 'm-e' });
  t.same(await page('after_id=m-a&limit=2'), { ids: ['m-b', 'm-c'], has_more: true, first_id: 'm-b', last_id: 'm-c' });
  t.same(await page('before_id=m-c'), { ids: ['m-a', 'm-b'], has_more: false, first_id: 'm-a', last_id: 'm-b' });
  t.same(await page('before_id=m-e&limit=2'), { ids: ['m-c', 'm-d'], has_more: true, first_id: 'm-c', last_id: 'm-d' }, 'the page just before the cursor; more before it');
  t.same(await page('limit=1000'), { ids: s.visible, has_more: false, first_id: 'm-a', last_id: 'm-e' });
  // A cursor naming no visible model is a position in the order: it leaks nothing and resumes.
  t.same(await page('after_id=m-bb'), { ids: ['m-c', 'm-d', 'm-e'], has_more: false, first_id: 'm-c', last_id: 'm-e' });
  t.same(await page('before_id=m-cc'), { ids: ['m-a', 'm-b', 'm-c'], has_more: false, first_id: 'm-a', last_id: 'm-c' });
  t.same(await page('after_id=m-e'), { ids: [], has_more: false, first_id: null, last_id: null }, 'past the end: an empty page');

  for (const query of ['limit=0', 'limit=abc', 'limit=1001', 'limit=2.5', 'limit=-1', 'after_id=m-a&before_id=m-e']) {
    const res = await s.messages(query);
    t.equal(res.status, 400, query);
    t.match(await res.json(), { type: 'error', error: { type: 'invalid_request_error', code: 'invalid_query_parameter' } }, query);
  }
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('messages-style list: 20 models a page by default (Anthropic documents limit default 20)', async (t) => {
  const s = await pagingSetup(t);
  const names = Array.from({ length: 25 }, (_, i) => `n-${String(i).padStart(2, '0')}`);
  const group = await s.gw.store.groups.create({ name: 'many', channel: 'ch14', base_url: s.upstream.url, models: names.map((external) => ({ external, upstream: 'u' })) });
  const key = await s.gw.store.accessKeys.create({ name: 'many', protocols: ['x-messages'], groups: [group.id] });
  const first = await new Anthropic({ apiKey: key.value, baseURL: s.gw.url, maxRetries: 0 }).models.list();
  t.same(first.data.map((m) => m.id), names.slice(0, 20));
  t.equal(first.has_more, true);
  const rest = await first.getNextPage();
  t.same(rest.data.map((m) => m.id), names.slice(20));
  t.equal(rest.has_more, false);
});

t.test('genai models.list({ config: { pageSize: 2 } }): pages of two, every visible model once over all pages', async (t) => {
  const s = await pagingSetup(t);
  const genai = new GoogleGenAI({ apiKey: s.key, httpOptions: { baseUrl: s.gw.url } });
  const pager = await genai.models.list({ config: { pageSize: 2 } });
  t.same(pager.page.map((m) => m.name), s.visible.slice(0, 2).map((n) => `models/${n}`));
  t.ok(pager.hasNextPage(), 'a next page exists');
  const names: (string | undefined)[] = [];
  for await (const model of pager) names.push(model.name);
  t.same(names, s.visible.map((n) => `models/${n}`), 'each visible model exactly once, hidden ones never');
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('generate-style list: pageToken round-trips, nextPageToken only when more remain, bad paging is INVALID_ARGUMENT', async (t) => {
  const s = await pagingSetup(t);
  const page = async (query: string) => {
    const res = await s.generate(query);
    t.equal(res.status, 200, query);
    const body = (await res.json()) as { models: { name: string }[]; nextPageToken?: string };
    return { names: body.models.map((m) => m.name.replace(/^models\//, '')), token: body.nextPageToken };
  };
  const first = await page('pageSize=3');
  t.same(first.names, s.visible.slice(0, 3));
  t.type(first.token, 'string');
  const second = await page(`pageSize=3&pageToken=${encodeURIComponent(first.token!)}`);
  t.same(second, { names: s.visible.slice(3), token: undefined }, 'the rest, and no nextPageToken');
  t.same(await page(''), { names: s.visible, token: undefined }, 'default page size holds them all');
  t.same(await page('pageSize=0&pageToken='), { names: s.visible, token: undefined }, 'pageSize 0 and an empty token are the defaults');

  for (const query of ['pageToken=garbage', `pageToken=${Buffer.from('m-b').toString('base64url')}`, 'pageSize=-1', 'pageSize=abc', 'pageSize=1.5']) {
    const res = await s.generate(query);
    t.equal(res.status, 400, query);
    t.match(await res.json(), { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'invalid_query_parameter' }] } }, query);
  }
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('generate-style list: 50 models a page by default, and a page size above 1000 is 1000 (Google documents both)', async (t) => {
  const s = await pagingSetup(t);
  const names = Array.from({ length: 1005 }, (_, i) => `g-${String(i).padStart(4, '0')}`);
  const group = await s.gw.store.groups.create({ name: 'many', channel: 'ch15', base_url: s.upstream.url, models: names.map((external) => ({ external, upstream: 'u' })) });
  const key = await s.gw.store.accessKeys.create({ name: 'many', protocols: ['x-generate'], groups: [group.id] });
  const list = async (query: string) => {
    const res = await fetch(`${s.gw.url}/v1beta/models?${query}`, { headers: { 'x-goog-api-key': key.value } });
    const body = (await res.json()) as { models: { name: string }[]; nextPageToken?: string };
    return { names: body.models.map((m) => m.name.replace(/^models\//, '')), token: body.nextPageToken };
  };
  const first = await list('');
  t.same(first.names, names.slice(0, 50), 'the default page');
  t.type(first.token, 'string');
  const capped = await list('pageSize=5000');
  t.same(capped.names, names.slice(0, 1000), 'the maximum page');
  const rest = await list(`pageSize=5000&pageToken=${encodeURIComponent(capped.token!)}`);
  t.same(rest, { names: names.slice(1000), token: undefined });
});

t.test('openai models.list() ignores paging parameters: the whole list', async (t) => {
  const s = await pagingSetup(t);
  const res = await fetch(`${s.gw.url}/v1/models?limit=2&after_id=m-b`, { headers: { authorization: `Bearer ${s.key}` } });
  t.equal(res.status, 200);
  const body = (await res.json()) as { object: string; data: { id: string }[] };
  t.equal(body.object, 'list');
  t.same(body.data.map((m) => m.id), s.visible);
});

// Every field the SDK's ModelInfo declares as present (resources/models.d.ts): a configured
// model is `active`, and what the gateway cannot know about it is null, never missing.
const MODEL_INFO_FIELDS = ['capabilities', 'created_at', 'deprecated_at', 'display_name', 'id', 'lifecycle', 'line', 'max_input_tokens', 'max_tokens', 'retires_at', 'type'];

t.test('anthropic models.list() / retrieve(): every ModelInfo field, lifecycle active and the unknowns null', async (t) => {
  const s = await setup(t);
  const anthropic = new Anthropic({ apiKey: s.scoped, baseURL: s.gw.url, maxRetries: 0 });
  const listed = (await anthropic.models.list()).data;
  const retrieved = await anthropic.models.retrieve('team-c');
  for (const model of [...listed, retrieved]) {
    t.same(Object.keys(model).sort(), MODEL_INFO_FIELDS, `${model.id}: the fields ModelInfo declares`);
    t.match(model, { lifecycle: 'active', deprecated_at: null, retires_at: null, line: null, capabilities: null, max_input_tokens: null, max_tokens: null });
  }
  t.same(
    listed.filter((m) => m.lifecycle === 'active').map((m) => m.id),
    ['team-a', 'team-b', 'team-c'],
    "the SDK's own lifecycle filter keeps them",
  );
});

t.test('anthropic models.list({ lifecycle }): the configured models when active is asked for, else an empty page', async (t) => {
  const s = await setup(t);
  const urls: string[] = [];
  const anthropic = new Anthropic({
    apiKey: s.scoped,
    baseURL: s.gw.url,
    maxRetries: 0,
    fetch: (async (url: string | URL | Request, init?: RequestInit) => {
      urls.push(String(url));
      return fetch(url, init);
    }) as typeof fetch,
  });
  const ids = async (lifecycle: ('active' | 'deprecated' | 'retired')[]) => {
    const page = await anthropic.models.list({ lifecycle });
    return { ids: page.data.map((m) => m.id), has_more: page.has_more, first_id: page.first_id };
  };
  t.same(await ids(['retired']), { ids: [], has_more: false, first_id: null });
  t.match(urls.at(-1), /[?&]lifecycle%5B%5D=retired(&|$)/, 'the SDK sends the filter in brackets');
  t.same(await ids(['deprecated', 'retired']), { ids: [], has_more: false, first_id: null });
  t.same(await ids(['active']), { ids: ['team-a', 'team-b', 'team-c'], has_more: false, first_id: 'team-a' });
  t.same(await ids(['retired', 'active']), { ids: ['team-a', 'team-b', 'team-c'], has_more: false, first_id: 'team-a' });

  const raw = async (query: string) => fetch(`${s.gw.url}/v1/models?${query}`, { headers: { 'x-api-key': s.scoped, 'anthropic-version': '2023-06-01' } });
  t.same(((await (await raw('lifecycle=deprecated')).json()) as { data: unknown[] }).data, [], 'unbracketed, as a repeated parameter');
  const bad = await raw('lifecycle%5B%5D=gone');
  t.equal(bad.status, 400);
  t.match(await bad.json(), { type: 'error', error: { type: 'invalid_request_error', code: 'invalid_query_parameter' } });
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('created / created_at: the earliest serving Group\'s creation, the same in list and retrieve and on every call', async (t) => {
  const s = await setup(t);
  const [chat, msg] = await s.gw.store.groups.list();
  // team-a is served by chat (created first) and msg; team-c by msg alone.
  const chatAt = Date.parse(chat!.created_at);
  const msgAt = Date.parse(msg!.created_at);
  const anthropic = new Anthropic({ apiKey: s.scoped, baseURL: s.gw.url, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: s.scoped, baseURL: `${s.gw.url}/v1`, maxRetries: 0 });
  for (let call = 0; call < 2; call++) {
    const listed = (await anthropic.models.list()).data;
    t.same(
      listed.map((m) => [m.id, m.created_at]),
      [
        ['team-a', new Date(chatAt).toISOString()],
        ['team-b', new Date(chatAt).toISOString()],
        ['team-c', new Date(msgAt).toISOString()],
      ],
    );
    t.equal((await anthropic.models.retrieve('team-c')).created_at, new Date(msgAt).toISOString());
    const created = (await openai.models.list()).data.map((m) => [m.id, m.created]);
    t.same(created, [
      ['team-a', Math.floor(chatAt / 1000)],
      ['team-b', Math.floor(chatAt / 1000)],
      ['team-c', Math.floor(msgAt / 1000)],
    ]);
    t.equal((await openai.models.retrieve('team-a')).created, Math.floor(chatAt / 1000));
  }
});
