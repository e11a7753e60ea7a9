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
