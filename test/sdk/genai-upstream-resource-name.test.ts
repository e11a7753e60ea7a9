import t from 'tap';
import { GoogleGenAI } from '@google/genai';
import { generateResponse, jsonBody, logOf, rig, writeJson } from './helpers/vendor-wire.ts';

// Google lists a model by its resource name (`models/gemini-2.0-flash`), and the OpenAI-compatible
// endpoint of the same key lists that as its id: an operator may well enter it as a Group's
// upstream model. Its path is `/v1beta/models/gemini-2.0-flash:verb`, never `models/models%2F…`,
// which Google answers 404, and a body's model member names it once (`models/models/…` is no model).

const client = (url: string, apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } });

t.test('an upstream model given as models/{id}: the path names the model once, and so do the body members', async (t) => {
  const r = await rig(t, { channel: 'ch15', protocols: ['x-generate', 'x-embeddings'], external: 'team', upstreamModel: 'models/gemini-2.0-flash' }, (req, res) =>
    req.url.includes(':batchEmbedContents') ? writeJson(res, 200, { embeddings: [{ values: [0.5] }] }) : req.url.includes(':countTokens') ? writeJson(res, 200, { totalTokens: 3 }) : writeJson(res, 200, generateResponse('gemini-2.0-flash', 'ok')),
  );
  const genai = client(r.gw.url, r.keyValue);
  const response = await genai.models.generateContent({ model: 'team', contents: 'x' });
  t.equal(response.text, 'ok');
  await genai.models.countTokens({ model: 'team', contents: 'x' });
  await genai.models.embedContent({ model: 'team', contents: ['a', 'b'] });
  const sent = await fetch(`${r.gw.url}/v1beta/models/team:countTokens`, {
    method: 'POST',
    headers: { 'x-goog-api-key': r.keyValue, 'content-type': 'application/json' },
    body: JSON.stringify({ generateContentRequest: { model: 'team', contents: [{ parts: [{ text: 'x' }] }] } }),
  });
  t.equal(sent.status, 200);

  const [generate, count, embed, countBare] = r.upstream.requests;
  t.equal(generate!.url, '/v1beta/models/gemini-2.0-flash:generateContent');
  t.equal(count!.url, '/v1beta/models/gemini-2.0-flash:countTokens');
  t.equal(embed!.url, '/v1beta/models/gemini-2.0-flash:batchEmbedContents');
  t.same(
    (jsonBody(embed!).requests as { model: string }[]).map((q) => q.model),
    ['models/gemini-2.0-flash', 'models/gemini-2.0-flash'],
    'each listed request names the resource once',
  );
  t.equal((jsonBody(countBare!).generateContentRequest as { model: string }).model, 'models/gemini-2.0-flash', 'a bare spelling gets the resource name as configured');
  t.match(await logOf(r.gw, response.sdkHttpResponse?.headers?.['x-switchyard-request-id']), { status: 200, external_model: 'team', upstream_model: 'models/gemini-2.0-flash' });
});

t.test('an upstream model given as tunedModels/{id} goes to that collection, not under models/', async (t) => {
  const r = await rig(t, { channel: 'ch15', protocols: ['x-generate'], external: 'team', upstreamModel: 'tunedModels/my-tuned-7' }, (req, res) =>
    req.url.includes(':countTokens') ? writeJson(res, 200, { totalTokens: 3 }) : writeJson(res, 200, generateResponse('tunedModels/my-tuned-7', 'ok')),
  );
  const genai = client(r.gw.url, r.keyValue);
  const answer = await genai.models.generateContent({ model: 'team', contents: 'x' });
  t.equal(answer.text, 'ok', "the SDK reads the tuned model's answer");
  const sent = await fetch(`${r.gw.url}/v1beta/models/team:countTokens`, {
    method: 'POST',
    headers: { 'x-goog-api-key': r.keyValue, 'content-type': 'application/json' },
    body: JSON.stringify({ generateContentRequest: { model: 'models/team', contents: [{ parts: [{ text: 'x' }] }] } }),
  });
  t.equal(sent.status, 200);
  t.equal(r.upstream.requests[0]!.url, '/v1beta/tunedModels/my-tuned-7:generateContent');
  t.equal(r.upstream.requests[1]!.url, '/v1beta/tunedModels/my-tuned-7:countTokens');
  t.equal((jsonBody(r.upstream.requests[1]!).generateContentRequest as { model: string }).model, 'tunedModels/my-tuned-7');
});
