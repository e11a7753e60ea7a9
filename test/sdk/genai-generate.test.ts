import t from 'tap';
import { ApiError, GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { generateChunks, generateResponse, jsonBody, leaksKey, logOf, rig, writeJson, writeSse, writeSseThenBreak } from './helpers/vendor-wire.ts';

// The official @google/genai SDK (v2) against switchyard's generate routes (ch15, native).

const ROUTE = { channel: 'ch15', protocols: ['x-generate'], external: 'team-gen', upstreamModel: 'vendor-gen-1' };

function client(url: string, apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } });
}

/** genai puts the response body, as JSON text, in the ApiError message. */
function bodyOf(err: unknown): { error?: { code?: number; status?: string; message?: string; details?: { reason?: string }[] } } {
  const text = (err as Error).message;
  return JSON.parse(text.slice(text.indexOf('{'))) as ReturnType<typeof bodyOf>;
}

function requestIdOf(response: GenerateContentResponse): string | undefined {
  return response.sdkHttpResponse?.headers?.['x-switchyard-request-id'];
}

t.test('non-streaming: typed GenerateContentResponse, model mapped in the path, upstream x-goog-api-key, usage logged', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 200, generateResponse('vendor-gen-1', 'Generated hello.', { promptTokenCount: 6, candidatesTokenCount: 3 })));
  const response = await client(r.gw.url, r.keyValue).models.generateContent({ model: 'team-gen', contents: 'hello', config: { temperature: 0.5 } });

  t.equal(response.text, 'Generated hello.');
  t.equal(response.candidates?.[0]?.finishReason, 'STOP');
  t.equal(response.usageMetadata?.promptTokenCount, 6);
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1beta/models/vendor-gen-1:generateContent', 'mapped model in the path, no key in the query');
  t.equal(seen.headers['x-goog-api-key'], 'sk-upstream-1');
  t.match(jsonBody(seen), { contents: [{ parts: [{ text: 'hello' }], role: 'user' }], generationConfig: { temperature: 0.5 } });
  t.notOk(leaksKey(seen, r.keyValue), 'the client key never reaches the upstream');

  const log = await logOf(r.gw, requestIdOf(response));
  t.match(log, { protocol: 'x-generate', operation: 'generate-content', status: 200, external_model: 'team-gen', upstream_model: 'vendor-gen-1' });
  t.match(log?.usage, { input_tokens: 6, output_tokens: 3 });
});

t.test('streaming: ?alt=sse chunks in order through the SDK iterator, usage logged from the last usageMetadata', async (t) => {
  const pieces = ['Stream', 'ed ', 'gen', 'erate'];
  // Google frames SSE with CRLF line ends.
  const r = await rig(t, ROUTE, (_req, res) => writeSse(res, generateChunks('vendor-gen-1', pieces, { promptTokenCount: 8, candidatesTokenCount: 4 }), { eol: '\r\n' }));
  const stream = await client(r.gw.url, r.keyValue).models.generateContentStream({ model: 'team-gen', contents: 'go' });
  const chunks: GenerateContentResponse[] = [];
  for await (const chunk of stream) chunks.push(chunk);

  t.same(
    chunks.map((c) => c.text),
    pieces,
    'every chunk, in order',
  );
  t.equal(chunks.at(-1)?.candidates?.[0]?.finishReason, 'STOP');
  const seen = r.upstream.requests[0]!;
  t.equal(seen.url, '/v1beta/models/vendor-gen-1:streamGenerateContent?alt=sse');
  t.equal(seen.headers['x-goog-api-key'], 'sk-upstream-1');
  t.notOk(leaksKey(seen, r.keyValue));

  const log = await logOf(r.gw, chunks[0] && requestIdOf(chunks[0]));
  t.match(log, { operation: 'stream-generate-content', status: 200, error_code: null });
  t.match(log?.usage, { input_tokens: 8, output_tokens: 4 });
});

t.test('the key as the `key` query parameter (as in the REST samples) is accepted and not forwarded', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 200, generateResponse('vendor-gen-1', 'ok')));
  const viaQuery = await fetch(`${r.gw.url}/v1beta/models/team-gen:generateContent?key=${encodeURIComponent(r.keyValue)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }),
  });
  t.equal(viaQuery.status, 200);
  t.equal(r.upstream.requests[0]?.url, '/v1beta/models/vendor-gen-1:generateContent', 'no key in the upstream query');
  t.notOk(leaksKey(r.upstream.requests[0]!, r.keyValue));
});

t.test('gateway refusals raise ApiError with the status; the reason is in the generate error shape', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeJson(res, 500, {}));
  const completionsOnly = await r.gw.store.accessKeys.create({ name: 'completions only', protocols: ['x-completions'] });

  const wrongModel = await client(r.gw.url, r.keyValue).models.generateContent({ model: 'not-configured', contents: 'x' }).catch((e: unknown) => e);
  t.type(wrongModel, ApiError);
  t.equal((wrongModel as ApiError).status, 404);
  t.match(bodyOf(wrongModel), { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'model_not_visible' }] } });

  const notAllowed = await client(r.gw.url, completionsOnly.value).models.generateContentStream({ model: 'team-gen', contents: 'x' }).catch((e: unknown) => e);
  t.type(notAllowed, ApiError, 'a refused stream raises before any chunk');
  t.equal((notAllowed as ApiError).status, 403);
  t.match(bodyOf(notAllowed), { error: { code: 403, status: 'PERMISSION_DENIED', details: [{ reason: 'protocol_not_allowed' }] } });

  const badKey = await client(r.gw.url, 'AIza-wrong').models.generateContent({ model: 'team-gen', contents: 'x' }).catch((e: unknown) => e);
  t.type(badKey, ApiError);
  t.equal((badKey as ApiError).status, 401);
  t.match(bodyOf(badKey), { error: { code: 401, status: 'UNAUTHENTICATED', details: [{ reason: 'access_key_invalid' }] } });
  t.equal(r.upstream.requests.length, 0);
});

t.test('upstream errors pass through: 400 INVALID_ARGUMENT and 429 RESOURCE_EXHAUSTED', async (t) => {
  const bad = {
    error: {
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } }],
    },
  };
  const r400 = await rig(t, ROUTE, (_req, res) => writeJson(res, 400, bad));
  const e400 = await client(r400.gw.url, r400.keyValue).models.generateContent({ model: 'team-gen', contents: 'x' }).catch((e: unknown) => e);
  t.type(e400, ApiError);
  t.equal((e400 as ApiError).status, 400);
  t.same(bodyOf(e400), bad, 'the vendor error body, unchanged');

  const exhausted = {
    error: {
      code: 429,
      message: 'Resource has been exhausted (e.g. check quota).',
      status: 'RESOURCE_EXHAUSTED',
      details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '17s' }],
    },
  };
  const r429 = await rig(t, ROUTE, (_req, res) => writeJson(res, 429, exhausted, { 'retry-after': '17' }));
  const e429 = await client(r429.gw.url, r429.keyValue).models.generateContentStream({ model: 'team-gen', contents: 'x' }).catch((e: unknown) => e);
  t.type(e429, ApiError);
  t.equal((e429 as ApiError).status, 429);
  t.same(bodyOf(e429), exhausted);
  // genai's ApiError carries no headers: read retry-after from a plain call (on a fresh rig,
  // since the 429 above rightly put the only credential into cooldown).
  const rRaw = await rig(t, ROUTE, (_req, res) => writeJson(res, 429, exhausted, { 'retry-after': '17' }));
  const raw = await fetch(`${rRaw.gw.url}/v1beta/models/team-gen:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': rRaw.keyValue, 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(raw.status, 429);
  t.equal(raw.headers.get('retry-after'), '17', 'retry-after as the upstream sent it');
});

t.test('mid-stream upstream failure: the SDK iterator raises ApiError with the gateway reason', async (t) => {
  for (const partial of [undefined, 'data: {"candidates": [{"content": {"par']) {
    await t.test(partial === undefined ? 'break between events' : 'break inside an event', async (t) => {
      const r = await rig(t, ROUTE, (_req, res) => writeSseThenBreak(res, generateChunks('vendor-gen-1', ['First', ' second', ' third']).slice(0, 2), { eol: '\r\n', ...(partial === undefined ? {} : { partial }) }));
      const stream = await client(r.gw.url, r.keyValue).models.generateContentStream({ model: 'team-gen', contents: 'x' });
      const texts: (string | undefined)[] = [];
      let requestId: string | undefined;
      const err = await (async () => {
        for await (const chunk of stream) {
          texts.push(chunk.text);
          requestId ??= requestIdOf(chunk);
        }
      })().catch((e: unknown) => e);
      t.same(texts, ['First', ' second']);
      t.type(err, ApiError, 'the stream ends with a typed error, not silently and not hanging');
      t.equal((err as ApiError).status, 502, 'the status a break before the first byte is answered with');
      t.match(bodyOf(err), { error: { status: 'UNAVAILABLE', details: [{ reason: 'upstream_stream_broken' }] } });
      const log = await logOf(r.gw, requestId);
      t.match(log, { error_code: 'upstream_stream_broken' });
    });
  }
});

t.test('a model name with a slash, as the SDK sends it (unencoded): generateContent and models.get', async (t) => {
  const r = await rig(t, { ...ROUTE, external: 'org/name', upstreamModel: 'org/up' }, (_req, res) => writeJson(res, 200, generateResponse('org/up', 'Slashed hello.')));
  const genai = client(r.gw.url, r.keyValue);
  const response = await genai.models.generateContent({ model: 'org/name', contents: 'hello' });
  t.equal(response.text, 'Slashed hello.');
  t.equal(r.upstream.requests.length, 1);
  // The upstream model is one path segment, its slash percent-encoded.
  t.equal(r.upstream.requests[0]?.url, `/v1beta/models/${encodeURIComponent('org/up')}:generateContent`);
  t.match(await logOf(r.gw, requestIdOf(response)), { operation: 'generate-content', external_model: 'org/name', upstream_model: 'org/up' });

  const model = await genai.models.get({ model: 'org/name' });
  t.equal(model.name, 'models/org/name');
  t.equal(r.upstream.requests.length, 1, 'models.get is answered by the gateway');
});
