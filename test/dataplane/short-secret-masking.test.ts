import OpenAI from 'openai';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import type { ServerResponse } from 'node:http';

// A local OpenAI-compatible upstream (Ollama, llama.cpp, vLLM without auth) is commonly given a
// placeholder key such as `a` or `none`. The gateway masks the upstream secret out of answers,
// but a secret that short only where it stands as a whole token: `a` in `application/json`
// and `none` in `nonexistent` are ordinary text, not the key.

const EMBEDDINGS = { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }], model: 'vendor-emb', usage: { prompt_tokens: 2, total_tokens: 2 } };
const EMBEDDINGS_TEXT = JSON.stringify(EMBEDDINGS);

async function route(t: Test, secret: string, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch21', baseUrl: upstream.url, models: [{ external: 'emb', upstream: 'vendor-emb' }], protocols: ['x-chat-embeddings'], upstreamKeys: [secret] });
  return { upstream, gw, keyValue };
}

const embeddingsRequest = (url: string, keyValue: string) =>
  fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'emb', input: 'hi' }) });

for (const secret of ['a', 'none']) {
  t.test(`credential "${secret}": a 200 JSON answer's content-type and body arrive as sent, a whole-token echo in a header masked`, async (t) => {
    const { upstream, gw, keyValue } = await route(t, secret, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': `key=${secret}; model=nonexistent-latest` }).end(EMBEDDINGS_TEXT);
    });
    const res = await embeddingsRequest(gw.url, keyValue);
    t.equal(upstream.requests[0]?.headers.authorization, `Bearer ${secret}`, 'the upstream got the placeholder key');
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'application/json', 'content-type as sent');
    // A secret under 12 characters displays as one `*` a character (src/store/mask.ts).
    t.equal(res.headers.get('x-echo'), 'key=***; model=nonexistent-latest', 'only the whole token masked');
    t.equal(await res.text(), EMBEDDINGS_TEXT, 'body as sent');
  });

  t.test(`credential "${secret}": the openai SDK parses an embeddings answer`, async (t) => {
    const { gw, keyValue } = await route(t, secret, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(EMBEDDINGS_TEXT);
    });
    const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const answer = await client.embeddings.create({ model: 'emb', input: 'hi', encoding_format: 'float' });
    t.same(answer.data.map((d) => d.embedding), [[0.5, -0.25]], 'the upstream\'s vectors');
    t.equal(answer.model, 'vendor-emb');
  });
}

t.test('credential "none": an upstream 401 naming the key reaches the client with it masked, its content-type intact', async (t) => {
  const { gw, keyValue } = await route(t, 'none', (_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"key none is invalid"}');
  });
  const res = await embeddingsRequest(gw.url, keyValue);
  t.equal(res.status, 401);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.equal(await res.text(), '{"error":"key *** is invalid"}');
});

t.test('credential "a": an upstream error body keeps its words, the key alone masked', async (t) => {
  const body = '{"error":{"message":"invalid api key a for model latest","type":"invalid_request_error"}}';
  const { gw, keyValue } = await route(t, 'a', (_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' }).end(body);
  });
  const res = await embeddingsRequest(gw.url, keyValue);
  t.equal(res.status, 401);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.equal(await res.text(), body.replace(' key a ', ' key *** '));
});

t.test('credential "none": an event-stream error with the key at the end of one write and its neighbour in the next', async (t) => {
  const { gw, keyValue } = await route(t, 'none', async (_req, res) => {
    res.writeHead(400, { 'content-type': 'text/event-stream' });
    res.write('data: {"error":"key none');
    await new Promise((resolve) => setTimeout(resolve, 20));
    res.write('" nonex none');
    await new Promise((resolve) => setTimeout(resolve, 20));
    res.end('x none\n\n');
  });
  const res = await embeddingsRequest(gw.url, keyValue);
  t.equal(res.status, 400);
  t.equal(await res.text(), 'data: {"error":"key ***" nonex nonex ***\n\n');
});
