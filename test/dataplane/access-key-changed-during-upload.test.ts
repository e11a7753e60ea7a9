import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import type { ConfigStore } from '../../src/store/config-store.ts';
import type { AccessKeyRecord } from '../../src/store/records.ts';
import { seedRoute, startUpstream, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { deferred, eventually, withTimeout } from './helpers/dataplane-scenarios.ts';

// A request is admitted by its AccessKey before its body is read; the key may change while the
// body uploads. What the key is once the body is in decides: a key deleted, rotated, disabled or
// shut out of every Group is refused then, before any upstream call (docs/data-plane.md, step 2).

const BOUND_MS = 30_000;
const HEAD = '{"model":"team-model",';
const REST = '"messages":[{"role":"user","content":"hi"}]}';

/** Resolves once the gateway has looked `value` up (the admitting check runs right after, with no wait). */
function lookedUp(store: ConfigStore, value: string): Promise<void> {
  const seen = deferred();
  const findByValue = store.accessKeys.findByValue.bind(store.accessKeys);
  store.accessKeys.findByValue = async (v) => {
    const found = await findByValue(v);
    if (v === value) setImmediate(() => seen.resolve());
    return found;
  };
  return seen.promise;
}

function answerOk(_req: unknown, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"c","choices":[]}');
}

interface Answer {
  status: number;
  body: { error?: { code?: string } };
  requestId: string | undefined;
}

/** Sends the head of a chat request's body, runs `change` once the key was checked, then sends the rest. */
async function uploadAcross(url: string, store: ConfigStore, keyValue: string, change: () => Promise<unknown>, rest = REST): Promise<Answer> {
  const checked = lookedUp(store, keyValue);
  const u = new URL(url);
  const body = HEAD + rest;
  const answered = new Promise<Answer>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res: IncomingMessage) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), requestId: res.headers['x-request-id'] as string | undefined }));
    });
    req.on('error', reject);
    req.write(HEAD);
    void withTimeout(checked, BOUND_MS, 'the gateway to check the key')
      .then(change)
      .then(() => req.end(rest), reject);
  });
  return withTimeout(answered, BOUND_MS, 'the answer');
}

const changes: { name: string; change: (store: ConfigStore, key: AccessKeyRecord) => Promise<unknown>; status: number; code: string }[] = [
  { name: 'deleted', change: (store, key) => store.accessKeys.delete(key.id), status: 401, code: 'access_key_invalid' },
  { name: 'rotated', change: (store, key) => store.accessKeys.rotate(key.id), status: 401, code: 'access_key_invalid' },
  { name: 'disabled', change: (store, key) => store.accessKeys.update(key.id, { enabled: false }), status: 403, code: 'access_key_disabled' },
  { name: 'given no Group (groups: [])', change: (store, key) => store.accessKeys.update(key.id, { groups: [] }), status: 404, code: 'model_not_visible' },
];

for (const c of changes) {
  t.test(`a key ${c.name} while the request body uploads: ${c.status} ${c.code}, no upstream request, one record with that code`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
    const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'] });
    const answer = await uploadAcross(gw.url, gw.store, keyValue, () => c.change(gw.store, key));
    t.equal(answer.status, c.status);
    t.equal(answer.body.error?.code, c.code);
    t.equal(upstream.requests.length, 0, 'nothing reached the upstream');
    const records = await eventually(async () => {
      await gw.logs.flush();
      const items = (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items;
      return items.length > 0 ? items : undefined;
    }, 'the record');
    t.equal(records.length, 1, 'one record');
    t.match(records[0], { status: c.status, error_code: c.code, attempt_count: 0 });
  });
}

t.test('a key that stops recording request bodies while the body uploads: forwarded, and the record keeps no body', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'], recordBody: true });
  const answer = await uploadAcross(gw.url, gw.store, keyValue, () => gw.store.accessKeys.update(key.id, { record_request_body: false }));
  t.equal(answer.status, 200);
  t.equal(upstream.requests.length, 1);
  t.same(JSON.parse(upstream.requests[0]!.body.toString()).messages, JSON.parse(HEAD + REST).messages, 'the body went through whole');
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
  }, 'the record');
  t.match(record, { status: 200, has_request_body: false });
});

/** The key's only record, once written. */
async function onlyRecord(t: Test, gw: Gateway, keyId: number) {
  const records = await eventually(async () => {
    await gw.logs.flush();
    const items = (await gw.logs.list({ access_key_id: keyId }, { limit: 10 })).items;
    return items.length > 0 ? items : undefined;
  }, 'the record');
  t.equal(records.length, 1, 'one record');
  return records[0]!;
}

/** Not JSON once whole: the body is refused 400 invalid_json, unless the key is refused first. */
const INVALID_REST = '"messages": oops';

t.test('a key that stops recording request bodies while an invalid body uploads: 400 invalid_json, and the record keeps no body', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'], recordBody: true });
  const answer = await uploadAcross(gw.url, gw.store, keyValue, () => gw.store.accessKeys.update(key.id, { record_request_body: false }), INVALID_REST);
  t.equal(answer.status, 400);
  t.equal(answer.body.error?.code, 'invalid_json');
  t.match(await onlyRecord(t, gw, key.id), { status: 400, error_code: 'invalid_json', has_request_body: false });
});

for (const c of changes.slice(0, 2)) {
  t.test(`a recording key ${c.name} while an invalid body uploads: ${c.status} ${c.code} before the body's refusal, and no body recorded`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
    const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'], recordBody: true });
    const answer = await uploadAcross(gw.url, gw.store, keyValue, () => c.change(gw.store, key), INVALID_REST);
    t.equal(answer.status, c.status);
    t.equal(answer.body.error?.code, c.code);
    t.match(await onlyRecord(t, gw, key.id), { status: c.status, error_code: c.code, has_request_body: false });
  });
}

t.test('a key that starts recording request bodies while the body uploads: forwarded, and the record keeps no body (it records from the next request)', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'], recordBody: false });
  const answer = await uploadAcross(gw.url, gw.store, keyValue, () => gw.store.accessKeys.update(key.id, { record_request_body: true }));
  t.equal(answer.status, 200);
  t.equal(upstream.requests.length, 1);
  t.match(await onlyRecord(t, gw, key.id), { status: 200, has_request_body: false });
});

t.test('a key with a requests quota edited while the body uploads: checked again without the place it holds, and holds only that one', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answerOk);
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'], quota: { total: { requests: 2 } } });
  const recorded = (n: number) =>
    eventually(async () => {
      await gw.logs.flush();
      return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items.length >= n ? true : undefined;
    }, `${n} records`);
  const send = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: HEAD + REST }).then(async (r) => ({ status: r.status, code: r.ok ? undefined : ((await r.json()) as Answer['body']).error?.code }));
  t.same(await send(), { status: 200, code: undefined }, 'the first of two requests');
  await recorded(1);
  // An edit between the requests: the key is looked up afresh, as lookedUp watches for.
  await gw.store.accessKeys.update(key.id, { name: 'first' });
  const answer = await uploadAcross(gw.url, gw.store, keyValue, () => gw.store.accessKeys.update(key.id, { name: 'renamed' }));
  t.equal(answer.status, 200, 'the second of two requests passes its second check');
  await recorded(2);
  await gw.store.accessKeys.update(key.id, { quota: { total: { requests: 3 } } });
  t.same(await send(), { status: 200, code: undefined }, 'the third of three passes: the second left no place held behind');
  await recorded(3);
  t.same(await send(), { status: 429, code: 'quota_exceeded' }, 'the fourth is past the limit');
  t.equal(upstream.requests.length, 3);
});

// A form is routed when its model field arrives, and its first attempt streams as the upload
// comes: the key is read again once the upload has ended, for the body's recording only.

const BOUNDARY = 'switchyard-form-boundary';
const FORM_HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
const FORM_FILE = Buffer.alloc(64 * 1024, 0x41);
const FORM_TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/** A transcription upstream that tells when a request reached it (before its body has ended) and answers once it has. */
async function formUpstream(t: Test) {
  const reached = deferred();
  const bodies: Buffer[] = [];
  const server = createServer((req, res) => {
    reached.resolve();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, reached: reached.promise, bodies };
}

/** Sends a form's model field and half its file, runs `change` once the upstream request has begun, then sends the rest. */
function uploadFormAcross(url: string, keyValue: string, reached: Promise<void>, change: () => Promise<unknown>): Promise<number> {
  const u = new URL(url);
  const length = FORM_HEAD.length + FORM_FILE.length + FORM_TAIL.length;
  const answered = new Promise<number>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: '/v1/audio/transcriptions', method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(length) } }, (res: IncomingMessage) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.write(FORM_HEAD);
    req.write(FORM_FILE.subarray(0, FORM_FILE.length / 2));
    void withTimeout(reached, BOUND_MS, 'the upstream request to begin')
      .then(change)
      .then(() => {
        req.write(FORM_FILE.subarray(FORM_FILE.length / 2));
        req.end(FORM_TAIL);
      }, reject);
  });
  return withTimeout(answered, BOUND_MS, 'the answer');
}

const formChanges: { name: string; change: (store: ConfigStore, key: AccessKeyRecord) => Promise<unknown>; recorded: boolean }[] = [
  { name: 'left as it is', change: async () => undefined, recorded: true },
  { name: 'no longer recording request bodies', change: (store, key) => store.accessKeys.update(key.id, { record_request_body: false }), recorded: false },
  { name: 'deleted', change: (store, key) => store.accessKeys.delete(key.id), recorded: false },
  { name: 'rotated', change: (store, key) => store.accessKeys.rotate(key.id), recorded: false },
  { name: 'disabled', change: (store, key) => store.accessKeys.update(key.id, { enabled: false }), recorded: false },
];

for (const c of formChanges) {
  t.test(`a recording key ${c.name} while a form streams to the upstream: forwarded whole, and the record ${c.recorded ? 'holds' : 'holds no'} body`, async (t) => {
    const upstream = await formUpstream(t);
    const gw = await gateway(t);
    const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper-1', upstream: 'whisper-1' }], protocols: ['x-suite'], recordBody: true });
    t.equal(await uploadFormAcross(gw.url, keyValue, upstream.reached, () => c.change(gw.store, key)), 200, 'the attempt begun at the model field is not called off');
    t.equal(upstream.bodies.length, 1);
    t.equal(upstream.bodies[0]!.length, FORM_HEAD.length + FORM_FILE.length + FORM_TAIL.length, 'the whole form went through');
    t.match(await onlyRecord(t, gw, key.id), { status: 200, has_request_body: c.recorded });
  });
}

// The key is read again when the upload ends, not when the answer does: a change made while the
// upstream works on a form it has whole leaves the recording as the key had it then.

/** A transcription upstream that tells when a form has reached it whole (startUpstream answers only then), and answers once `release` is resolved. */
async function holdingFormUpstream(t: Test) {
  const whole = deferred();
  const release = deferred();
  const upstream = await startUpstream(async (_req, res) => {
    whole.resolve();
    await release.promise;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"ok"}');
  });
  t.teardown(async () => {
    release.resolve();
    await upstream.close();
  });
  return { url: upstream.url, whole: whole.promise, release };
}

for (const c of formChanges.slice(1)) {
  t.test(`a recording key ${c.name} after a form's upload ended, while the upstream works on it: the record holds the body`, async (t) => {
    const upstream = await holdingFormUpstream(t);
    const gw = await gateway(t);
    const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper-1', upstream: 'whisper-1' }], protocols: ['x-suite'], recordBody: true });
    const form = Buffer.concat([FORM_HEAD, FORM_FILE, FORM_TAIL]);
    const answered = fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: form });
    await withTimeout(upstream.whole, BOUND_MS, 'the form to reach the upstream whole');
    await c.change(gw.store, key);
    upstream.release.resolve();
    t.equal((await withTimeout(answered, BOUND_MS, 'the answer')).status, 200);
    t.match(await onlyRecord(t, gw, key.id), { status: 200, has_request_body: true });
  });
}
