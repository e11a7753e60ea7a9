import t, { type Test } from 'tap';
import type { Gateway } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { diskFullAfter } from './helpers/disk-full-after.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { spoolEmptied } from './helpers/spool-directory.ts';
import { okUpstream } from './helpers/upstream-behaviours.ts';

// A spool file that fails while a body is written to it (a full disk) is the gateway's failure:
// the client gets 503 spool_unavailable in its protocol's error shape, no credential is blamed
// (none cools down, none is tried next), and the spool directory is left empty. The disk is
// stood in for by patching fs.WriteStream in this process, where the server runs.

const BUFFERED = 16 * 1024;
const BOUNDARY = 'XyZspool';
const FILE = Buffer.alloc(700_000, 0x42);
/** Spool files fail once they would pass this many bytes. */
const DISK_BYTES = 500_000;

function formWith(parts: { name: string; filename?: string; value: Buffer | string }[]): Buffer {
  const pieces = parts.flatMap((p) => [
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"\r\nContent-Type: image/png` : ''}\r\n\r\n`),
    Buffer.from(p.value),
    Buffer.from('\r\n'),
  ]);
  return Buffer.concat([...pieces, Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

const modelFirst = formWith([{ name: 'model', value: 'img' }, { name: 'prompt', value: 'a red square' }, { name: 'image', filename: 'in.png', value: FILE }]);
const fileFirst = formWith([{ name: 'image', filename: 'in.png', value: FILE }, { name: 'model', value: 'img' }]);

/** An image edit of `form` with the access key `keyValue`. */
function postImageEdit(gw: Gateway, keyValue: string, form: Buffer): Promise<Response> {
  return fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: form });
}

/** The answer, the record, and whether each credential is still active. */
async function checkSpoolUnavailable(t: Test, gw: Gateway, res: Response, seeded: Awaited<ReturnType<typeof seedGroup>>, attempts: number) {
  t.equal(res.status, 503, 'the gateway is unavailable, not the upstream (502) nor a bug (500)');
  t.match(await res.json(), { error: { code: 'spool_unavailable', type: String, message: String } }, "in the protocol's error shape");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 503, error_code: 'spool_unavailable', attempt_count: attempts });
  if (attempts > 0) t.match(record.attempts, [{ error_code: 'spool_unavailable' }], 'the attempt is marked with the spool failure, no other credential tried');
  for (const credential of seeded.credentials) {
    t.match(await credentialView(gw.store, seeded.group.id, credential.id), { state: 'active', cooldown_until: null }, `credential ${credential.id} is not blamed`);
  }
  await spoolEmptied(gw);
}

t.test('image edit, model field first: a full disk mid-upload answers 503 spool_unavailable and blames no credential', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await postImageEdit(gw, keyValue, modelFirst);
  await checkSpoolUnavailable(t, gw, res, seeded, 1);
  t.same(upstream.requests, [], 'no upstream got a whole form');
});

t.test('image edit, model field after the file: a full disk before the model answers 503 spool_unavailable too', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await postImageEdit(gw, keyValue, fileFirst);
  await checkSpoolUnavailable(t, gw, res, seeded, 0);
  t.same(upstream.requests, [], 'nothing reached the upstream');
});

t.test('image edit, model field after the file, key recording bodies: a full disk before the model records the form as far as it was read', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'], record_request_body: true });
  diskFullAfter(t, DISK_BYTES);
  const res = await postImageEdit(gw, keyValue, fileFirst);
  t.equal(res.status, 503);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  // The form's length was declared (fetch sends a buffer with content-length): less of it arrived than it declared.
  t.match(record.request_body, { state: 'truncated', original_bytes: fileFirst.length }, 'recorded, truncated, at its declared size');
  t.same(upstream.requests, [], 'nothing reached the upstream');
  t.ok(seeded.credentials.length === 1);
});

t.test('responses namespace passthrough: a full disk mid-upload answers 503 spool_unavailable and blames no credential', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await fetch(`${gw.url}/v1/responses/vendor-ext/upload`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/octet-stream' }, body: FILE });
  await checkSpoolUnavailable(t, gw, res, seeded, 1);
  t.same(upstream.requests, [], 'no upstream got the whole body');
});

t.test('a Group mapping the model to a name with CR LF: refused before any upstream byte, no credential blamed', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor\r\nimg' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  const small = formWith([{ name: 'model', value: 'img' }, { name: 'image', filename: 'in.png', value: 'png' }]);
  const res = await postImageEdit(gw, keyValue, small);
  t.equal(res.status, 502, "the Group's configuration, not the client (4xx) nor a bug (500)");
  t.match(await res.json(), { error: { code: 'model_mapping_unusable', message: /CR or LF/ } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'model_mapping_unusable', attempt_count: 1, attempts: [{ status: null, error_code: 'model_mapping_unusable' }] });
  t.same(upstream.requests, [], 'nothing reached the upstream');
  for (const credential of seeded.credentials) t.match(await credentialView(gw.store, seeded.group.id, credential.id), { state: 'active', cooldown_until: null });
  await spoolEmptied(gw);
});
