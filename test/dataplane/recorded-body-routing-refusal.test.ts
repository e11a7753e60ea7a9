import { request, type IncomingMessage } from 'node:http';
import t, { type Test } from 'tap';
import { startUpstream, startDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A form is routed as soon as its model field is read, while the upload may still come. One
// refused then is recorded as far as it arrived (docs/data-plane.md, step 10): whole when every
// byte of its declared content-length had arrived, else truncated; a chunked one by the bytes
// that arrived, its end not yet seen.

const BOUNDARY = 'rtRefused';
const FORM = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nnot-a-model\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nhello world\r\n--${BOUNDARY}--\r\n`);

async function gateway(t: Test): Promise<{ gw: Gateway; keyValue: string; upstreamRequests: () => number }> {
  const upstream = await startUpstream((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"hi"}'));
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper', upstream: 'vendor-whisper' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'], record_request_body: true });
  return { gw, keyValue, upstreamRequests: () => upstream.requests.length };
}

function send(url: string, keyValue: string, declareLength: boolean): Promise<{ status: number; requestId: string | undefined }> {
  const u = new URL(url);
  const framing: Record<string, string> = declareLength ? { 'content-length': String(FORM.length) } : { 'transfer-encoding': 'chunked' };
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: '/v1/audio/transcriptions', method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...framing } }, (res: IncomingMessage) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-switchyard-request-id'] as string | undefined }));
    });
    req.on('error', reject);
    req.end(FORM);
  });
}

t.test('a whole form with a content-length refused by routing (model_not_visible): recorded whole, not truncated', async (t) => {
  const { gw, keyValue, upstreamRequests } = await gateway(t);
  const answer = await send(gw.url, keyValue, true);
  t.equal(answer.status, 404);
  t.equal(upstreamRequests(), 0);
  const record = await waitForLog(gw, answer.requestId);
  t.match(record, { status: 404, error_code: 'model_not_visible' });
  t.same(record.request_body, { state: 'recorded', original_bytes: FORM.length, body: FORM.toString('utf8') });
});

t.test('a chunked form refused by routing: the bytes that arrived, its size what arrived', async (t) => {
  const { gw, keyValue } = await gateway(t);
  const answer = await send(gw.url, keyValue, false);
  t.equal(answer.status, 404);
  const record = await waitForLog(gw, answer.requestId);
  const recorded = record.request_body as { state: string; original_bytes: number; body: string };
  t.equal(recorded.original_bytes, Buffer.byteLength(recorded.body), 'its size is what arrived');
  t.ok(FORM.toString('utf8').startsWith(recorded.body) && recorded.body.length > 0, 'the start of the form as sent');
  // Refused as its model field was read: the end had not been seen yet unless all of it had.
  t.ok(recorded.state === 'truncated' || recorded.body === FORM.toString('utf8'), 'truncated unless all of it was kept');
});
