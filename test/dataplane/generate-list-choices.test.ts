import t, { type Test } from 'tap';
import { GoogleGenAI } from '@google/genai';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';

// What a generate-style client reads off the model lists and its verb spellings: each entry's
// supportedGenerationMethods are the generate-style methods the key may call that a Group
// serving the model routes; a percent-encoded colon before a `:verb` is that verb.

async function setup(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url.includes(':generateContent') ? { candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP', index: 0 }] } : {}));
  });
  const groups = gw.store.groups;
  const gen = await groups.create({ name: 'gen', channel: 'ch15', base_url: upstream.url, models: [{ external: 'emb', upstream: 'text-embedding-004' }, { external: 'g4:latest', upstream: 'up-g4' }] });
  await groups.create({ name: 'chat', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat-only', upstream: 'v-chat' }] });
  await gw.store.credentials.createMany(gen.id, [{ kind: 'api_key', values: { api_key: 'sk-up' }, secretFields: ['api_key'] }]);
  const both = await gw.store.accessKeys.create({ name: 'both', protocols: ['x-generate', 'x-embeddings'] });
  const embedOnly = await gw.store.accessKeys.create({ name: 'embed-only', protocols: ['x-embeddings'] });
  return { gw, upstream, both: both.value, embedOnly: embedOnly.value };
}

t.test('supportedGenerationMethods: the methods the key may call that a serving Group routes, in manifest order', async (t) => {
  const s = await setup(t);
  const genai = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: s.gw.url } });
  const actions = new Map<string | undefined, string[] | undefined>();
  for await (const model of await genai(s.both).models.list()) actions.set(model.name, model.supportedActions);
  t.same(
    [...actions],
    [
      ['models/chat-only', []],
      ['models/emb', ['generateContent', 'countTokens', 'embedContent', 'batchEmbedContents']],
      ['models/g4:latest', ['generateContent', 'countTokens', 'embedContent', 'batchEmbedContents']],
    ],
    'ch15 serves both protocols natively; ch02 would convert a generate call, which is not carried',
  );
  // Google's snippet: the embedding models are those whose supported actions name embedContent.
  const embedding: string[] = [];
  for await (const model of await genai(s.embedOnly).models.list()) if (model.supportedActions?.includes('embedContent')) embedding.push(model.name!);
  t.same(embedding, ['models/emb', 'models/g4:latest']);
  t.same((await genai(s.embedOnly).models.get({ model: 'emb' })).supportedActions, ['embedContent', 'batchEmbedContents'], 'only the protocols the key may call');
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('a percent-encoded colon before a declared :verb is the verb; before anything else it is part of the model', async (t) => {
  const s = await setup(t);
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] });
  for (const spelling of ['g4:latest%3AgenerateContent', 'g4%3Alatest%3agenerateContent', 'g4%3Alatest:generateContent']) {
    const res = await fetch(`${s.gw.url}/v1beta/models/${spelling}?key=${s.both}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    t.equal(res.status, 200, spelling);
    t.match(await res.json(), { candidates: [{ content: { parts: [{ text: 'hi' }] } }] }, spelling);
  }
  t.same(
    s.upstream.requests.map((r) => `${r.method} ${r.url}`),
    Array(3).fill('POST /v1beta/models/up-g4:generateContent'),
    'the model is g4:latest and the method generateContent, however the colons were spelled',
  );
  const get = await fetch(`${s.gw.url}/v1beta/models/emb%3AgenerateContent?key=${s.both}`);
  t.equal(get.status, 405, 'GET of a spelled verb is its 405, as GET /v1beta/models/emb:generateContent is');
  t.equal(get.headers.get('allow'), 'POST');
  const model = await fetch(`${s.gw.url}/v1beta/models/g4%3Alatest?key=${s.both}`);
  t.match(await model.json(), { name: 'models/g4:latest' }, 'a colon before no verb stays in the model name');
  t.equal(s.upstream.requests.length, 3);
});
