import t, { type Test } from 'tap';
import { get } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';

function getJson(url: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

// A `key` query parameter is sent only by generate-style clients: when the presented key came
// from it (no openai or anthropic credential header holds one, presentedAccessKey), it picks the
// generate shape of GET /v1/models, for the list, one model, and the refusals.

async function setup(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(500);
    res.end();
  });
  await gw.store.groups.create({ name: 'gen', channel: 'ch15', base_url: upstream.url, models: [{ external: 'emb', upstream: 'text-embedding-004' }, { external: 'g4:latest', upstream: 'up-g4' }] });
  await gw.store.groups.create({ name: 'chat', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat-only', upstream: 'v-chat' }] });
  const embedOnly = await gw.store.accessKeys.create({ name: 'embed-only', protocols: ['x-embeddings'] });
  return { gw, upstream, embedOnly: embedOnly.value };
}

t.test('GET /v1/models?key=: the generate list shape, unless an openai or anthropic credential header is sent', async (t) => {
  const s = await setup(t);
  const list = await fetch(`${s.gw.url}/v1/models?key=${s.embedOnly}`);
  t.equal(list.status, 200);
  t.match(await list.json(), { models: [{ name: 'models/chat-only' }, { name: 'models/emb', supportedGenerationMethods: ['embedContent', 'batchEmbedContents'] }, { name: 'models/g4:latest' }] });
  const one = await fetch(`${s.gw.url}/v1/models/emb?key=${s.embedOnly}`);
  t.same(await one.json(), { name: 'models/emb', baseModelId: 'emb', displayName: 'emb', supportedGenerationMethods: ['embedContent', 'batchEmbedContents'] });
  const missing = await fetch(`${s.gw.url}/v1/models/nope?key=${s.embedOnly}`);
  t.equal(missing.status, 404);
  t.match(await missing.json(), { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'model_not_visible' }] } }, 'a refusal in the generate error shape too');
  const resource = await fetch(`${s.gw.url}/v1/models/org/name?key=${s.embedOnly}`);
  t.match(await resource.json(), { error: { code: 404, details: [{ reason: 'model_not_visible' }] } }, 'the generate-style {model} is a resource name spanning segments');
  const nowhere = await fetch(`${s.gw.url}/v1/nothing-here?key=${s.embedOnly}`);
  t.match(await nowhere.json(), { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'route_not_found' }] } }, 'a path no endpoint takes answers a key= client in its shape');

  const bearer = await fetch(`${s.gw.url}/v1/models?key=${s.embedOnly}`, { headers: { authorization: `Bearer ${s.embedOnly}` } });
  t.match(await bearer.json(), { object: 'list', data: [{ id: 'chat-only', object: 'model' }] }, 'an openai credential header keeps the completions shape');
  const anthropic = await fetch(`${s.gw.url}/v1/models?key=${s.embedOnly}`, { headers: { 'x-api-key': s.embedOnly, 'anthropic-version': '2023-06-01' } });
  t.match(await anthropic.json(), { data: [{ type: 'model', id: 'chat-only' }], has_more: false });
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('GET /v1/models?key=: an Authorization header that presents no key keeps the generate shape', async (t) => {
  const s = await setup(t);
  // presentedAccessKey passes over a non-Bearer or empty Authorization and reads `key`; the shape
  // follows it. node:http, since fetch would trim the empty Bearer's trailing space.
  for (const authorization of ['Basic x', 'Bearer ']) {
    const list = await getJson(`${s.gw.url}/v1/models?key=${s.embedOnly}`, { authorization });
    t.equal(list.status, 200, authorization);
    t.match(list.body, { models: [{ name: 'models/chat-only' }, { name: 'models/emb' }, { name: 'models/g4:latest' }] }, `${authorization}: the generate list shape`);
  }
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});
