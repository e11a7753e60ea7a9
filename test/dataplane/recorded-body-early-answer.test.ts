import { open, type FileHandle } from 'node:fs/promises';
import { devNull } from 'node:os';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readlinkSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { startDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, deferred, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// Spec section 2: a recorded request body is the original body and original_bytes its size;
// when only its start was kept the record says `truncated`. A streamed upload the upstream
// answered before it ended is recorded as far as it arrived: truncated, its size the declared
// content-length (or, with none, what arrived). A body that did end is recorded whole.

const CHUNK = 256 * 1024;
const CHUNK_GAP_MS = 100;
const BOUNDARY = 'XyZearly';
/** Every byte value, so that a byte lost, added or re-encoded shows. */
const pattern = (length: number) => Buffer.from(Array.from({ length }, (_, i) => (i * 7 + (i >> 8)) & 0xff));

const RAW_3MIB = pattern(3 * 1024 * 1024);
const FORM_3MIB = (() => {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="in.png"\r\nContent-Type: image/png\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return Buffer.concat([head, pattern(3 * 1024 * 1024 - head.length - tail.length), tail]);
})();
const RAW_300KIB = pattern(300 * 1024);

/** An upstream that answers 400 as soon as a request's headers arrive, reading none of its body. */
async function earlyAnswerUpstream(t: Test): Promise<string> {
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(400, { 'content-type': 'application/json', connection: 'close' });
    res.end(JSON.stringify({ error: { message: 'upstream says 400', type: 'invalid_request_error' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An upstream that reads the whole body, then answers 200. */
async function readingUpstream(t: Test): Promise<{ url: string; bodies: Buffer[] }> {
  const bodies: Buffer[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    bodies.push(Buffer.concat(chunks));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

async function gateway(t: Test, options: Parameters<typeof startDataPlane>[0] = {}): Promise<Gateway> {
  const gw = await startDataPlane(options);
  t.teardown(() => gw.close());
  return gw;
}

/**
 * Sends `body` in CHUNK pieces CHUNK_GAP_MS apart (with its content-length, or chunked), and
 * stops sending once the answer arrives. Resolves with the answer's status, its request id and
 * how many bytes were written before it came.
 */
function slowUpload(url: string, headers: Record<string, string>, body: Buffer, declareLength: boolean): Promise<{ status: number; requestId: string | undefined; sent: number }> {
  return new Promise((resolve, reject) => {
    const answered = deferred();
    let sent = 0;
    const req = httpRequest(url, { method: 'POST', headers: declareLength ? { ...headers, 'content-length': String(body.length) } : { ...headers, 'transfer-encoding': 'chunked' } });
    req.on('response', (res) => {
      answered.resolve();
      res.resume();
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-switchyard-request-id'] as string | undefined, sent });
      });
    });
    // The gateway drains the rest of a body answered mid-upload (within bounds), but this client
    // destroys its request once it has the answer: a write still in flight then may fail.
    req.on('error', (err) => (answered.settled ? undefined : reject(err)));
    const next = () => {
      if (answered.settled) return;
      if (sent >= body.length) return void req.end();
      const piece = body.subarray(sent, sent + CHUNK);
      sent += piece.length;
      req.write(piece);
      setTimeout(next, CHUNK_GAP_MS);
    };
    next();
  });
}

function keptBytes(recorded: { body: string; encoding?: string }): Buffer {
  return recorded.encoding === 'base64' ? Buffer.from(recorded.body, 'base64') : Buffer.from(recorded.body, 'utf8');
}

const EARLY_CASES = [
  { name: 'a 3 MiB passthrough with a content-length', path: '/v1/responses/vendor-ext/upload', channel: 'ch09', protocol: 'x-responses', model: 'm', contentType: 'application/octet-stream', body: RAW_3MIB, declareLength: true },
  { name: 'a 3 MiB image edit form with a content-length', path: '/v1/images/edits', channel: 'ch09', protocol: 'x-images', model: 'img', contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: FORM_3MIB, declareLength: true },
  { name: 'a chunked 300 KiB passthrough', path: '/v1/responses/vendor-ext/upload', channel: 'ch09', protocol: 'x-responses', model: 'm', contentType: 'application/octet-stream', body: RAW_300KIB, declareLength: false },
] as const;

for (const c of EARLY_CASES) {
  t.test(`${c.name}, answered by the upstream before it ended: recorded truncated, its start as sent`, async (t) => {
    const upstreamUrl = await earlyAnswerUpstream(t);
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: c.channel, baseUrl: upstreamUrl, models: [{ external: c.model, upstream: `vendor-${c.model}` }], secrets: ['sk-a'] });
    const { keyValue } = await createKey(gw.store, { protocols: [c.protocol], record_request_body: true });
    const answer = await slowUpload(`${gw.url}${c.path}`, { authorization: `Bearer ${keyValue}`, 'content-type': c.contentType }, c.body, c.declareLength);
    t.equal(answer.status, 400, "the upstream's answer is relayed");
    t.ok(answer.sent < c.body.length, 'the answer came before the whole body was sent');
    const record = await waitForLog(gw, answer.requestId);
    const recorded = record.request_body as { state: string; original_bytes: number; body: string; encoding?: string };
    t.equal(recorded.state, 'truncated', 'not all of the body was kept');
    const kept = keptBytes(recorded);
    t.ok(kept.length > 0, 'what arrived first is kept');
    t.ok(kept.length <= answer.sent, 'no more than was sent');
    t.same(kept, c.body.subarray(0, kept.length), 'the kept bytes are the start of the body as sent');
    if (c.declareLength) t.equal(recorded.original_bytes, c.body.length, 'its size is the declared content-length');
    else {
      // With no declared length, its size is what arrived: all of it was kept (less than the 1 MiB kept).
      t.equal(recorded.original_bytes, kept.length, 'its size is what arrived');
      t.ok(recorded.original_bytes < c.body.length, 'less than the body the client meant to send');
    }
  });
}

const ENDED_CASES = [
  { name: 'a chunked 300 KiB passthrough', path: '/v1/responses/vendor-ext/upload', channel: 'ch09', protocol: 'x-responses', model: 'm', contentType: 'application/octet-stream', body: RAW_300KIB, declareLength: false },
  {
    name: 'a 300 KiB image edit form',
    path: '/v1/images/edits',
    channel: 'ch09',
    protocol: 'x-images',
    model: 'img',
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    body: Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="in.png"\r\nContent-Type: image/png\r\n\r\n`), RAW_300KIB, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]),
    declareLength: true,
  },
] as const;

for (const c of ENDED_CASES) {
  t.test(`${c.name} that ended before the answer: recorded whole`, async (t) => {
    const upstream = await readingUpstream(t);
    const gw = await gateway(t, { bufferedJsonBytes: 16 * 1024 });
    await seedGroup(gw.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: c.model, upstream: `vendor-${c.model}` }], secrets: ['sk-a'] });
    const { keyValue } = await createKey(gw.store, { protocols: [c.protocol], record_request_body: true });
    const answer = await slowUpload(`${gw.url}${c.path}`, { authorization: `Bearer ${keyValue}`, 'content-type': c.contentType }, c.body, c.declareLength);
    t.equal(answer.status, 200);
    t.equal(upstream.bodies.length, 1, 'the upstream read a whole body');
    const record = await waitForLog(gw, answer.requestId);
    const recorded = record.request_body as { state: string; original_bytes: number; body: string; encoding?: string };
    t.match(recorded, { state: 'recorded', original_bytes: c.body.length });
    t.same(keptBytes(recorded), c.body, 'the body as sent, every byte');
  });
}

// A spooled JSON body is read from its file once per attempt; a file that cannot be read
// then is the gateway's failure (503 spool_unavailable), not the upstream's (no cooldown).

/** Until the test ends, reading a spool file through a FileHandle fails with EIO. */
async function spoolReadsFail(t: Test): Promise<void> {
  // FileHandle is not exported: its prototype is reached through one.
  const probe = await open(devNull, 'r');
  const proto = Object.getPrototypeOf(probe) as { read: (...args: unknown[]) => Promise<unknown> };
  await probe.close();
  const read = proto.read;
  const isSpool = (fd: number) => {
    try {
      return path.basename(readlinkSync(`/proc/self/fd/${fd}`)).startsWith('switchyard-body-');
    } catch {
      return false;
    }
  };
  proto.read = function (this: FileHandle, ...args: unknown[]) {
    if (isSpool(this.fd)) return Promise.reject(Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO', errno: -5, syscall: 'read' }));
    return read.apply(this, args);
  };
  t.teardown(() => {
    proto.read = read;
  });
}

t.test('a spooled JSON body whose file cannot be read answers 503 spool_unavailable and blames no credential', async (t) => {
  const upstream = await readingUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: 16 * 1024 });
  const seeded = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  await spoolReadsFail(t);
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(100_000) }] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  t.equal(res.status, 503, 'the gateway is unavailable, not the upstream (502)');
  t.match(await res.json(), { error: { code: 'spool_unavailable' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 503, error_code: 'spool_unavailable' });
  t.same(upstream.bodies, [], 'no upstream got a whole body');
  for (const credential of seeded.credentials) {
    t.match(await credentialView(gw.store, seeded.group.id, credential.id), { state: 'active', cooldown_until: null }, `credential ${credential.id} is not blamed`);
  }
});
