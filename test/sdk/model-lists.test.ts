import t, { type Test } from 'tap';
import OpenAI, { AuthenticationError as OpenAIAuthenticationError } from 'openai';
import Anthropic, { AuthenticationError as AnthropicAuthenticationError } from '@anthropic-ai/sdk';
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
  const narrow = await gw.store.accessKeys.create({ name: 'narrow', protocols: ['x-completions'], models: ['team-d', 'team-hidden'] });
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
    t.ok(model.supportedActions?.includes('generateContent'), 'the SDK maps supportedGenerationMethods');
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
