import { readdirSync, WriteStream } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { startDataPlane, startUpstream, type Gateway, type Upstream } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, eventually, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A spool file that fails while a body is written to it (a full disk) is the gateway's failure:
// the client gets 503 spool_unavailable in its protocol's error shape, no credential is blamed
// (none cools down, none is tried next), and the spool directory is left empty. The disk is
// stood in for by patching fs.WriteStream in this process, where the server runs.

const BUFFERED = 16 * 1024;
const BOUNDARY = 'XyZspool';
const FILE = Buffer.alloc(700_000, 0x42);
/** Spool files fail once they would pass this many bytes. */
const DISK_BYTES = 500_000;

type WriteCallback = (error?: Error | null) => void;

/** Until the test ends, a write that takes a spool file past `limit` bytes fails with ENOSPC. */
function diskFullAfter(t: Test, limit: number): void {
  const proto = WriteStream.prototype as unknown as {
    _write(chunk: Buffer, encoding: BufferEncoding, cb: WriteCallback): void;
    _writev(chunks: { chunk: Buffer }[], cb: WriteCallback): void;
  };
  const { _write: write, _writev: writev } = proto;
  const full = (stream: WriteStream, bytes: number) => path.basename(String(stream.path)).startsWith('switchyard-body-') && stream.bytesWritten + bytes > limit;
  const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  proto._write = function (this: WriteStream, chunk, encoding, cb) {
    if (full(this, chunk.length)) return cb(enospc());
    write.call(this, chunk, encoding, cb);
  };
  proto._writev = function (this: WriteStream, chunks, cb) {
    if (full(this, chunks.reduce((sum, c) => sum + c.chunk.length, 0))) return cb(enospc());
    writev.call(this, chunks, cb);
  };
  t.teardown(() => {
    proto._write = write;
    proto._writev = writev;
  });
}

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

async function upstreamOk(t: Test): Promise<Upstream> {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  t.teardown(() => upstream.close());
  return upstream;
}

async function gateway(t: Test): Promise<Gateway> {
  const gw = await startDataPlane({ bufferedJsonBytes: BUFFERED });
  t.teardown(() => gw.close());
  return gw;
}

async function spoolEmptied(gw: Gateway): Promise<void> {
  const dir = path.join(gw.dataDir, 'spool');
  await eventually(() => (readdirSync(dir).length === 0 ? true : undefined), 'the spool directory emptied');
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
  const upstream = await upstreamOk(t);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: modelFirst });
  await checkSpoolUnavailable(t, gw, res, seeded, 1);
  t.same(upstream.requests, [], 'no upstream got a whole form');
});

t.test('image edit, model field after the file: a full disk before the model answers 503 spool_unavailable too', async (t) => {
  const upstream = await upstreamOk(t);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: fileFirst });
  await checkSpoolUnavailable(t, gw, res, seeded, 0);
  t.same(upstream.requests, [], 'nothing reached the upstream');
});

t.test('responses namespace passthrough: a full disk mid-upload answers 503 spool_unavailable and blames no credential', async (t) => {
  const upstream = await upstreamOk(t);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  diskFullAfter(t, DISK_BYTES);
  const res = await fetch(`${gw.url}/v1/responses/vendor-ext/upload`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/octet-stream' }, body: FILE });
  await checkSpoolUnavailable(t, gw, res, seeded, 1);
  t.same(upstream.requests, [], 'no upstream got the whole body');
});

t.test('a Group mapping the model to a name with CR LF: refused before any upstream byte, no credential blamed', async (t) => {
  const upstream = await upstreamOk(t);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor\r\nimg' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-images'] });
  const small = formWith([{ name: 'model', value: 'img' }, { name: 'image', filename: 'in.png', value: 'png' }]);
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: small });
  t.equal(res.status, 502, "the Group's configuration, not the client (4xx) nor a bug (500)");
  t.match(await res.json(), { error: { code: 'model_mapping_unusable', message: /CR or LF/ } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'model_mapping_unusable', attempt_count: 1, attempts: [{ status: null, error_code: 'model_mapping_unusable' }] });
  t.same(upstream.requests, [], 'nothing reached the upstream');
  for (const credential of seeded.credentials) t.match(await credentialView(gw.store, seeded.group.id, credential.id), { state: 'active', cooldown_until: null });
  await spoolEmptied(gw);
});
