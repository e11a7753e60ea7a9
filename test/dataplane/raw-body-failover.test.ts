import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import type { Gateway, RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { closedPortUrl, createKey, deferred, eventually, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { spoolEmptied, spoolFiles } from './helpers/spool-directory.ts';
import { ok, okUpstream, secretOf, status, upstreamBySecret } from './helpers/upstream-behaviours.ts';

// Issue 4 item 4, for bodies the gateway reads nothing of: a passthrough under /v1/responses/*
// and a voice upload (a form that names no model). Past bufferedJsonBytes, or with no declared
// length, they are spooled as they arrive, so that an operation that is not replay safe still
// moves on after 401/403/429 or no connection made, sending the same bytes again.

const BUFFERED = 16 * 1024;
const BOUNDARY = 'XyZvoice';
/** Every byte value, so that a byte lost, added or re-encoded shows. */
const PAYLOAD = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 8)) & 0xff));

const voiceForm = Buffer.concat([
  Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="sample.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
  PAYLOAD,
  Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nnarrator\r\n--${BOUNDARY}--\r\n`),
]);

const ROUTES = [
  { op: 'responses-namespace', path: '/v1/responses/vendor-ext/upload', channel: 'ch09', protocol: 'x-responses', contentType: 'application/octet-stream', body: PAYLOAD },
  { op: 'voices-create', path: '/x-suite/v1/audio/voices', channel: 'ch03', protocol: 'x-suite', contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: voiceForm },
] as const;
type Route = (typeof ROUTES)[number];

/** With a content-length above bufferedJsonBytes, or chunked with none: both used to stream once. */
const FRAMINGS = ['content-length', 'chunked'] as const;
type Framing = (typeof FRAMINGS)[number];

function post(gw: Gateway, route: Route, keyValue: string, framing: Framing): Promise<Response> {
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': route.contentType };
  if (framing === 'content-length') return fetch(`${gw.url}${route.path}`, { method: 'POST', headers, body: route.body });
  // A stream body has no length: undici sends it chunked.
  const body = Readable.toWeb(Readable.from([route.body.subarray(0, 100_000), route.body.subarray(100_000)])) as ReadableStream;
  return fetch(`${gw.url}${route.path}`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
}

function checkFraming(t: Test, seen: RecordedUpstreamRequest, route: Route, framing: Framing): void {
  if (framing === 'content-length') t.equal(seen.headers['content-length'], String(route.body.length), 'the declared length');
  else t.equal(seen.headers['transfer-encoding'], 'chunked', 'chunked, as the client sent it');
}

for (const route of ROUTES) {
  for (const framing of FRAMINGS) {
    t.test(`${route.op} (${framing}): a 429 from the first credential sends the body again to the second, byte for byte`, async (t) => {
      const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': '60' }) });
      const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
      await seedGroup(gw.store, { channel: route.channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
      const { keyValue } = await createKey(gw.store, { protocols: [route.protocol], record_request_body: true });
      const res = await post(gw, route, keyValue, framing);
      t.equal(res.status, 200);
      t.same(await res.json(), { ok: true });
      t.same(upstream.requests.map(secretOf), ['sk-a', 'sk-b'], 'the first credential, then the second');
      for (const seen of upstream.requests) {
        t.ok(seen.body.equals(route.body), `${secretOf(seen)} got the body as the client sent it`);
        t.equal(seen.headers['content-type'], route.contentType);
        checkFraming(t, seen, route, framing);
      }
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { operation: route.op, status: 200, attempt_count: 2, attempts: [{ status: 429, error_code: 'upstream_429' }, { status: 200 }] });
      t.match(record.request_body, { state: 'recorded', original_bytes: route.body.length });
      await spoolEmptied(gw);
    });

    t.test(`${route.op} (${framing}): a first Group that cannot be reached passes the body to the second`, async (t) => {
      const upstream = await upstreamBySecret(t, {});
      const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
      await seedGroup(gw.store, { channel: route.channel, baseUrl: await closedPortUrl(), models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a'], priority: 10 });
      await seedGroup(gw.store, { channel: route.channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-b'], priority: 1 });
      const { keyValue } = await createKey(gw.store, { protocols: [route.protocol] });
      const res = await post(gw, route, keyValue, framing);
      t.equal(res.status, 200);
      t.same(upstream.requests.map(secretOf), ['sk-b'], 'served by the second Group');
      t.ok(upstream.requests[0]!.body.equals(route.body), 'the whole body, as sent');
      checkFraming(t, upstream.requests[0]!, route, framing);
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 200, attempt_count: 2, attempts: [{ status: null, error_code: 'upstream_connect_failed' }, { status: 200 }] });
      await spoolEmptied(gw);
    });

    t.test(`${route.op} (${framing}): a 500 from the first credential is not sent again (the upstream may have processed it)`, async (t) => {
      const upstream = await upstreamBySecret(t, { 'sk-a': status(500) });
      const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
      await seedGroup(gw.store, { channel: route.channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
      const { keyValue } = await createKey(gw.store, { protocols: [route.protocol] });
      const res = await post(gw, route, keyValue, framing);
      t.equal(res.status, 500);
      t.match(await res.json(), { error: { message: 'upstream says 500' } });
      t.same(upstream.requests.map(secretOf), ['sk-a'], 'the second credential is never tried');
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 500, attempt_count: 1 });
      await spoolEmptied(gw);
    });
  }
}

/** An upstream that answers as soon as the body's first `seen` bytes are in (429 for sk-a), then reads the rest. */
async function eagerUpstream(t: Test, seen: number) {
  const firstBytes = deferred();
  const bodies = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    const secret = secretOf(req);
    const chunks: Buffer[] = [];
    let size = 0;
    let answered = false;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (answered || size < seen) return;
      answered = true;
      if (secret === 'sk-a') {
        firstBytes.resolve();
        status(429)(res);
      }
    });
    req.on('end', () => {
      bodies.set(secret, Buffer.concat(chunks));
      if (secret !== 'sk-a') ok(res);
    });
    req.on('error', () => bodies.set(secret, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  t.teardown(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, firstBytes: firstBytes.promise, bodies };
}

t.test('responses-namespace: the first attempt streams as the upload comes; the second reads the spooled bytes again and follows the rest', async (t) => {
  const head = PAYLOAD.subarray(0, 100_000);
  const tail = PAYLOAD.subarray(100_000);
  const upstream = await eagerUpstream(t, head.length);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const { hostname, port } = new URL(gw.url);
  const req = httpRequest({ hostname, port, method: 'POST', path: '/v1/responses/vendor-ext/upload', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/octet-stream', 'content-length': PAYLOAD.length } });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
  req.write(head);
  // The rest is sent only once the first upstream has the head: it cannot have waited for the whole upload.
  await upstream.firstBytes;
  t.pass('the first attempt got the head of the upload before the rest was sent');
  req.end(tail);
  const answer = await answered;
  t.equal(answer.status, 200);
  t.same(JSON.parse(answer.body), { ok: true });
  await eventually(() => upstream.bodies.get('sk-b'), "the second credential's body");
  t.ok(upstream.bodies.get('sk-b')!.equals(PAYLOAD), 'the second credential got the whole upload, as sent');
  await spoolEmptied(gw);
});

t.test('responses-namespace: a client that leaves mid-upload leaves no spooled file behind', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED });
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const { hostname, port } = new URL(gw.url);
  const req = httpRequest({ hostname, port, method: 'POST', path: '/v1/responses/vendor-ext/upload', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/octet-stream', 'content-length': PAYLOAD.length } });
  req.on('error', () => {});
  req.write(PAYLOAD.subarray(0, 100_000));
  await eventually(() => (spoolFiles(gw).length > 0 ? true : undefined), 'the upload spooled');
  req.destroy();
  await spoolEmptied(gw);
  t.equal(upstream.requests.length, 0, 'the upstream never got a whole body');
});

t.test('responses-namespace: a chunked body that passes maxBodyBytes while it streams is still refused 413 request_too_large, and its spooled file removed', async (t) => {
  const upstream = await okUpstream(t);
  const gw = await gateway(t, { bufferedJsonBytes: BUFFERED, maxBodyBytes: 200 * 1024 });
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const { hostname, port } = new URL(gw.url);
  // No content-length: node sends it chunked.
  const req = httpRequest({ hostname, port, method: 'POST', path: '/v1/responses/vendor-ext/upload', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/octet-stream' } });
  const answered = new Promise<{ status: number; body: string; id: string | undefined }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), id: res.headers['x-switchyard-request-id'] as string | undefined }));
    });
    req.on('error', reject);
  });
  req.write(PAYLOAD.subarray(0, 100_000));
  // Past the limit only once the body is being spooled (and sent): the refusal comes from the stream.
  await eventually(() => (spoolFiles(gw).length > 0 ? true : undefined), 'the upload spooled');
  req.end(PAYLOAD.subarray(100_000));
  const answer = await answered;
  t.equal(answer.status, 413);
  t.match(JSON.parse(answer.body), { error: { code: 'request_too_large' } });
  t.same(upstream.requests, [], 'no upstream got a whole body');
  const record = await waitForLog(gw, answer.id);
  t.match(record, { status: 413, error_code: 'request_too_large', attempt_count: 1, attempts: [{ error_code: 'request_too_large' }] });
  await spoolEmptied(gw);
});
