import t, { type Test } from 'tap';
import { startUpstreamAndDataPlane, type Gateway, type Upstream } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A stored object the gateway remembers with its creator (a response, a voice) is reached by
// that AccessKey only: another key is answered 404 resource_not_found before anything is
// forwarded, a key narrowed past the model it was created with is refused model_not_visible, and
// a key past its tokens or cost quota can still read, cancel and delete it (docs/data-plane.md).

const USAGE = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
const NONE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

type Call = (keyValue: string, method: string, path: string, body?: unknown) => Promise<{ status: number; answer: { error?: { code: string; type: string; message: string } } & Record<string, unknown>; record: Awaited<ReturnType<typeof waitForLog>> }>;

function caller(gw: Gateway): Call {
  return async (keyValue, method, path, body) => {
    const headers: Record<string, string> = { authorization: `Bearer ${keyValue}` };
    if (typeof body === 'string' || (body !== undefined && !(body instanceof FormData))) headers['content-type'] = 'application/json';
    const sent = body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) };
    const res = await fetch(`${gw.url}${path}`, { method, headers, ...sent });
    return { status: res.status, answer: (await res.json()) as never, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
  };
}

/**
 * A responses upstream: a create is answered completed with USAGE, or queued with none when
 * `background`; any read, cancellation or deletion of an id it made is answered, of another 404.
 * One Group of two credentials, two keys seeing it, and the models `expensive` and `cheap`.
 */
async function responses(t: Test, quota: Record<string, unknown> | null = null) {
  const made = new Set<string>();
  let n = 0;
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    if (req.method === 'POST' && req.url === '/v1/responses') {
      const background = (JSON.parse(req.body.toString()) as { background?: boolean }).background === true;
      const id = `resp_${++n}`;
      made.add(id);
      return writeJson(res, 200, { id, object: 'response', status: background ? 'queued' : 'completed', output: [], usage: background ? null : USAGE });
    }
    const id = /^\/v1\/responses\/([^/?]+)/.exec(req.url)?.[1] ?? '';
    if (!made.has(id)) return writeJson(res, 404, { error: { message: `No response found with id '${id}'.`, type: 'invalid_request_error', code: null } });
    if (req.url.endsWith('/input_items')) return writeJson(res, 200, { object: 'list', data: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'the prompt' }] }] });
    if (req.method === 'DELETE') return writeJson(res, 200, { id, object: 'response.deleted', deleted: true });
    return writeJson(res, 200, { id, object: 'response', status: req.url.endsWith('/cancel') ? 'cancelled' : 'completed', output: [], usage: USAGE });
  });
  const { group } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'expensive', upstream: 'vendor-exp' }, { external: 'cheap', upstream: 'vendor-cheap' }], secrets: ['sk-account-one-0123456789', 'sk-account-two-0123456789'] });
  const a = await createKey(gw.store, { name: 'a', protocols: ['x-responses'], quota: quota as never });
  const b = await createKey(gw.store, { name: 'b', protocols: ['x-responses'] });
  const call = caller(gw);
  const create = async (body: Record<string, unknown> = {}) => {
    const r = await call(a.keyValue, 'POST', '/v1/responses', { model: 'expensive', input: 'the prompt', ...body });
    if (r.status !== 200) throw new Error(`create answered ${r.status}`);
    return r.answer['id'] as string;
  };
  return { gw, upstream, group, a, b, call, create, made };
}

/** Every call that names a stored response, as [method, path, body]. */
function namingCalls(id: string, model: string): [string, string, unknown?][] {
  return [
    ['GET', `/v1/responses/${id}`],
    ['GET', `/v1/responses/${id}/input_items`],
    ['POST', `/v1/responses/${id}/cancel`],
    ['POST', '/v1/responses', { model, input: 'go on', previous_response_id: id }],
    ['DELETE', `/v1/responses/${id}`],
  ];
}

function nothingForwarded(t: Test, upstream: Upstream, before: number, what: string): void {
  t.equal(upstream.requests.length, before, `${what}: nothing reached the upstream`);
}

t.test("another AccessKey's read, input items, cancellation, deletion and continuation of a response are not found, the owner's are answered", async (t) => {
  const { upstream, a, b, call, create } = await responses(t);
  const id = await create();
  const before = upstream.requests.length;
  for (const [method, path, body] of [...namingCalls(id, 'expensive'), ['POST', '/v1/responses/input_tokens', { model: 'expensive', input: 'x', previous_response_id: id }]] as const) {
    const other = await call(b.keyValue, method, path, body);
    t.equal(other.status, 404, `${method} ${path}: 404`);
    t.same(other.answer, { error: { message: 'No such object for this access key.', type: 'not_found_error', code: 'resource_not_found', param: null } }, `${method} ${path}: in the responses error shape`);
    t.match(other.record, { access_key_id: b.key.id, status: 404, error_code: 'resource_not_found', attempt_count: 0 });
  }
  nothingForwarded(t, upstream, before, "the other key's calls");
  for (const [method, path, body] of namingCalls(id, 'expensive')) {
    const own = await call(a.keyValue, method, path, body);
    t.equal(own.status, 200, `the owner's ${method} ${path} is answered`);
  }
  t.equal(upstream.requests.length, before + 5, "the owner's calls all reached the upstream");
});

t.test("another AccessKey's call for a response is answered as for one whose Group it cannot see: no probing", async (t) => {
  const { gw, upstream, group, a, b, call, create } = await responses(t);
  const id = await create();
  // Before, a key that did not see the holder's Group was told the object lived there (503).
  const { group: elsewhere } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'expensive', upstream: 'vendor-exp' }], secrets: ['sk-account-three-0123456789'] });
  await gw.store.accessKeys.update(b.key.id, { groups: [elsewhere.id] });
  t.not(elsewhere.id, group.id);
  const before = upstream.requests.length;
  const other = await call(b.keyValue, 'GET', `/v1/responses/${id}`);
  t.equal(other.status, 404);
  t.equal(other.answer.error?.code, 'resource_not_found');
  nothingForwarded(t, upstream, before, 'the other key');
  t.equal((await call(a.keyValue, 'GET', `/v1/responses/${id}`)).status, 200, 'the owner still reads it');
});

t.test('a response learned from a read names no creator: neither the reader nor the creator is shut out', async (t) => {
  const { upstream, a, b, call, made } = await responses(t);
  // Created upstream but not through this gateway (as before a restart): it does not remember it.
  made.add('resp_elsewhere');
  const learned = await call(b.keyValue, 'GET', '/v1/responses/resp_elsewhere');
  t.equal(learned.status, 200, 'read by one key');
  for (const key of [a, b]) {
    const again = await call(key.keyValue, 'GET', '/v1/responses/resp_elsewhere');
    t.equal(again.status, 200, `then read by key ${key.key.name}`);
  }
  t.equal(upstream.requests.length, 3);
});

t.test("a key narrowed past the model its response was created with is refused model_not_visible; another key still gets not found", async (t) => {
  const { gw, upstream, a, b, call, create } = await responses(t);
  const id = await create();
  await gw.store.accessKeys.update(a.key.id, { models: ['cheap'] });
  await gw.store.accessKeys.update(b.key.id, { models: ['cheap'] });
  const before = upstream.requests.length;
  for (const [method, path, body] of namingCalls(id, 'cheap')) {
    const own = await call(a.keyValue, method, path, body);
    t.equal(own.status, 404, `${method} ${path}: 404`);
    t.equal(own.answer.error?.code, 'model_not_visible', `${method} ${path}: the model's refusal`);
    t.match(own.answer.error?.message, /"expensive"/);
    const other = await call(b.keyValue, method, path, body);
    t.equal(other.answer.error?.code, 'resource_not_found', `${method} ${path}: another key's object stays not found`);
  }
  nothingForwarded(t, upstream, before, 'the narrowed keys');
  await gw.store.accessKeys.update(a.key.id, { models: null });
  t.equal((await call(a.keyValue, 'GET', `/v1/responses/${id}`)).status, 200, 'widened again, the owner reads it');
});

t.test('a key past its tokens quota can still read, cancel and delete its responses, and the billing read counts the usage', async (t) => {
  const { upstream, a, call, create } = await responses(t, { total: { tokens: 100 } });
  const first = await create({ background: true });
  const second = await create({ background: true });
  await create();
  const refused = await call(a.keyValue, 'POST', '/v1/responses', { model: 'expensive', input: 'more' });
  t.equal(refused.status, 429, 'a new generation is refused: 150 of 100 tokens used');
  t.equal(refused.answer.error?.code, 'quota_exceeded');
  const before = upstream.requests.length;
  const read = await call(a.keyValue, 'GET', `/v1/responses/${first}`);
  t.equal(read.status, 200, 'the read of a background response is answered');
  t.same(read.record.usage, { ...NONE, input_tokens: 100, output_tokens: 50 }, 'and counts its usage, spent upstream already');
  t.match(read.record, { external_model: 'expensive', upstream_model: 'vendor-exp' });
  const cancelled = await call(a.keyValue, 'POST', `/v1/responses/${second}/cancel`);
  t.equal(cancelled.status, 200, 'the cancellation is answered');
  t.same(cancelled.record.usage, { ...NONE, input_tokens: 100, output_tokens: 50 }, 'and bills what it reports');
  for (const [method, path] of [['GET', `/v1/responses/${second}/input_items`], ['DELETE', `/v1/responses/${first}`], ['DELETE', `/v1/responses/${second}`]] as const) {
    const r = await call(a.keyValue, method, path);
    t.equal(r.status, 200, `${method} ${path} is answered`);
    t.same(r.record.usage, NONE);
  }
  t.equal(upstream.requests.length, before + 5, 'each reached the upstream');
});

t.test('a key past its tokens quota is refused the responses passthrough and token counts, which may spend tokens upstream; its own read still passes', async (t) => {
  const { upstream, a, call, create } = await responses(t, { total: { tokens: 100 } });
  const id = await create();
  const before = upstream.requests.length;
  for (const [method, path, body] of [['POST', '/v1/responses/anything/run', { model: 'expensive', input: 'more' }], ['GET', '/v1/responses/anything/else'], ['POST', '/v1/responses/input_tokens', { model: 'expensive', input: 'more' }]] as const) {
    const r = await call(a.keyValue, method, path, body);
    t.equal(r.status, 429, `${method} ${path}: 429, 150 of 100 tokens used`);
    t.equal(r.answer.error?.code, 'quota_exceeded');
  }
  nothingForwarded(t, upstream, before, 'past the tokens limit');
  const read = await call(a.keyValue, 'GET', `/v1/responses/${id}`);
  t.equal(read.status, 200, 'the read of its own response is answered');
  t.equal(upstream.requests.length, before + 1);
});

t.test('a key past its requests quota is refused reads, cancellations and deletions too', async (t) => {
  const { upstream, a, call, create } = await responses(t, { total: { requests: 1, tokens: 1000 } });
  const id = await create({ background: true });
  const before = upstream.requests.length;
  for (const [method, path, body] of namingCalls(id, 'expensive')) {
    const r = await call(a.keyValue, method, path, body);
    t.equal(r.status, 429, `${method} ${path}: 429`);
    t.equal(r.answer.error?.code, 'quota_exceeded');
  }
  nothingForwarded(t, upstream, before, 'past the requests limit');
});

t.test("another AccessKey's retrieval, update and deletion of a voice are not found, the owner's are answered", async (t) => {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'voice_1', name: 'mine' }));
  });
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'up-tts' }], secrets: ['sk-account-a-0123456789', 'sk-account-b-0123456789'] });
  const a = await createKey(gw.store, { name: 'a', protocols: ['x-suite'] });
  const b = await createKey(gw.store, { name: 'b', protocols: ['x-suite'] });
  const call = caller(gw);
  const form = new FormData();
  form.append('name', 'mine');
  form.append('file', new Blob([Buffer.from('RIFF....WAVE')]), 'sample.wav');
  t.equal((await call(a.keyValue, 'POST', '/x-suite/v1/audio/voices', form)).status, 201);
  const calls = [['GET'], ['PATCH', { name: 'renamed' }], ['DELETE']] as const;
  const before = upstream.requests.length;
  for (const [method, body] of calls) {
    const other = await call(b.keyValue, method, '/x-suite/v1/audio/voices/voice_1', body);
    t.equal(other.status, 404, `${method}: 404`);
    t.equal(other.answer.error?.code, 'resource_not_found');
    t.match(other.record, { access_key_id: b.key.id, error_code: 'resource_not_found', attempt_count: 0 });
  }
  nothingForwarded(t, upstream, before, "the other key's calls");
  for (const [method, body] of calls) t.equal((await call(a.keyValue, method, '/x-suite/v1/audio/voices/voice_1', body)).status, 200, `the owner's ${method}`);
});

t.test('a stored object id with an encoded "/" is refused 400 invalid_path_parameter, so that no key reaches another\'s object through it; a model name may hold one', async (t) => {
  const { gw, upstream, a, b, call, create } = await responses(t);
  const id = await create();
  const before = upstream.requests.length;
  for (const keyValue of [b.keyValue, a.keyValue]) {
    for (const [method, path] of [['GET', `/v1/responses/${id}%2Finput_items`], ['GET', `/v1/responses/x%2F..%2F${id}`], ['POST', `/v1/responses/${id}%2Fx/cancel`], ['DELETE', `/v1/responses/${id}%2Fx`]] as const) {
      const r = await call(keyValue, method, path);
      t.equal(r.status, 400, `${method} ${path}: 400`);
      t.equal(r.answer.error?.code, 'invalid_path_parameter');
      t.match(r.record, { error_code: 'invalid_path_parameter', attempt_count: 0 });
    }
  }
  const suite = await createKey(gw.store, { name: 's', protocols: ['x-suite'] });
  const voice = await call(suite.keyValue, 'GET', '/x-suite/v1/audio/voices/voice_1%2Fx');
  t.equal(voice.status, 400, 'a voice id too');
  t.equal(voice.answer.error?.code, 'invalid_path_parameter');
  nothingForwarded(t, upstream, before, 'ids holding "/"');
  const { keyValue } = await createKey(gw.store, { name: 'g', protocols: ['x-generate'] });
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'org/name', upstream: 'org/up' }], secrets: ['sk-generate-0123456789'] });
  const generated = await fetch(`${gw.url}/v1beta/models/org%2Fname:countTokens`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: '{"contents":"x"}' });
  t.not(generated.status, 400, 'org%2Fname is a generate-style model name');
  t.equal(upstream.requests.length, before + 1, 'and is forwarded');
});
