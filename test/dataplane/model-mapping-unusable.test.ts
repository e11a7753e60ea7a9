import t from 'tap';
import type { Gateway } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { spoolEmptied } from './helpers/spool-directory.ts';
import { secretOf, upstreamBySecret } from './helpers/upstream-behaviours.ts';

// A Group that maps the model to a name with CR or LF cannot be sent in a form field
// (model_mapping_unusable): that Group is skipped, blaming no credential, and the next Group,
// whose mapping may be usable, is tried. Only when none is left does the client get 502.

const BOUNDARY = 'XyZmapping';

/** An image edit form with `model`, the file first as the official SDKs send it. */
function form(model: string): Buffer {
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="in.png"\r\nContent-Type: image/png\r\n\r\npng-bytes\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n--${BOUNDARY}--\r\n`,
  );
}

function postImageEdit(gw: Gateway, keyValue: string): Promise<Response> {
  return fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: form('img') });
}

t.test('a first Group whose mapping a form cannot carry is skipped: the second Group serves the edit', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const bad = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'bad\r\nname' }], secrets: ['sk-a1', 'sk-a2'], priority: 10 });
  const good = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-b' }], secrets: ['sk-b'], priority: 1 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  const res = await postImageEdit(gw, keyValue);
  t.equal(res.status, 200);
  t.same(await res.json(), { ok: true });
  t.same(upstream.requests.map(secretOf), ['sk-b'], 'only the second Group reached the upstream');
  t.ok(upstream.requests[0]!.body.equals(form('vendor-b')), "the form with the second Group's model");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 200,
    attempt_count: 2,
    attempts: [
      { group_id: String(bad.group.id), status: null, error_code: 'model_mapping_unusable' },
      { group_id: String(good.group.id), credential_id: String(good.credentials[0]!.id), status: 200 },
    ],
  });
  t.equal(record.attempts.length, 2, "the first Group's other credential is not tried with the same mapping");
  for (const credential of bad.credentials) t.match(await credentialView(gw.store, bad.group.id, credential.id), { state: 'active', cooldown_until: null }, `credential ${credential.id} is not blamed`);
  await spoolEmptied(gw);
});

t.test('only a Group whose mapping a form cannot carry: 502 model_mapping_unusable, nothing sent, no credential blamed', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const bad = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'bad\r\nname' }], secrets: ['sk-a1', 'sk-a2'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  const res = await postImageEdit(gw, keyValue);
  t.equal(res.status, 502, "the Group's configuration, not the client (4xx) nor a bug (500)");
  t.match(await res.json(), { error: { code: 'model_mapping_unusable', message: /CR or LF/ } });
  t.same(upstream.requests, [], 'nothing reached the upstream');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'model_mapping_unusable', attempt_count: 1, attempts: [{ group_id: String(bad.group.id), status: null, error_code: 'model_mapping_unusable' }] });
  for (const credential of bad.credentials) t.match(await credentialView(gw.store, bad.group.id, credential.id), { state: 'active', cooldown_until: null }, `credential ${credential.id} is not blamed`);
  await spoolEmptied(gw);
});

// A mapping with a lone surrogate (stored before the management API refused one) has no UTF-8
// spelling for the generate path: that Group is skipped as above, its credential not blamed
// (which would shelve it for every other model it serves).
t.test('a Group whose mapping a URL path cannot carry is skipped, no credential blamed: the next Group serves generate', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const bad = await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'x\ud800y' }, { external: 'other', upstream: 'other-up' }], secrets: ['sk-a1'], priority: 10 });
  const good = await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'org/ü:b' }], secrets: ['sk-b'], priority: 1 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const generate = (model: string) => fetch(`${gw.url}/v1beta/models/${model}:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: '{"contents":[]}' });
  const res = await generate('m');
  t.equal(res.status, 200);
  t.same(upstream.requests.map(secretOf), ['sk-b'], 'only the second Group reached the upstream');
  t.equal(upstream.requests[0]!.url, '/v1beta/models/org%2F%C3%BC%3Ab:generateContent', "the second Group's model, one percent-encoded segment");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, attempts: [{ group_id: String(bad.group.id), status: null, error_code: 'model_mapping_unusable' }, { group_id: String(good.group.id), status: 200 }] });
  t.match(await credentialView(gw.store, bad.group.id, bad.credentials[0]!.id), { state: 'active', cooldown_until: null }, 'the credential is not blamed');
  t.equal((await generate('other')).status, 200, "the first Group's credential still serves its other models");
  t.same(upstream.requests.map(secretOf), ['sk-b', 'sk-a1']);
});

t.test('a mapping with a lone surrogate is not sent in a form either (its UTF-8 would name U+FFFD instead)', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const bad = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'bad\udc00' }], secrets: ['sk-a1'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  const res = await postImageEdit(gw, keyValue);
  t.equal(res.status, 502);
  t.match(await res.json(), { error: { code: 'model_mapping_unusable', message: /lone surrogate/ } });
  t.same(upstream.requests, [], 'nothing reached the upstream');
  t.match(await credentialView(gw.store, bad.group.id, bad.credentials[0]!.id), { state: 'active', cooldown_until: null });
  await spoolEmptied(gw);
});
