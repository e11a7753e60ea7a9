import t, { type Test } from 'tap';
import { brotliCompressSync, deflateSync, gzipSync, gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { STREAM_STYLES, type StreamStyle } from './helpers/stream-styles.ts';

// A stream request answered 200 with a compressed JSON error object in place of the stream,
// echoing the key it was sent: the client gets it decoded, with the secret masked (as an
// uncompressed one: stream-error-secret-masking.test.ts); any other such answer goes as sent.

const SECRET = 'sk-stream-canary-0123456789abcdef';
const MASKED = '***cdef';
const ERROR_BODY = JSON.stringify({ error: { message: `Incorrect API key provided: ${SECRET}`, type: 'invalid_request_error', code: 'invalid_api_key' } });

/** The content codings the gateway decodes, and how each is applied. */
const CODINGS: Record<string, (body: string) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };

/** The style's stream request; its answer as it comes (node's client does not decode it). */
function post(url: string, style: StreamStyle, keyValue: string): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${url}${style.path}`, { method: 'POST', headers: { ...style.headers(keyValue), 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(style.body));
  });
}

/** Posts the style's stream request to a Group whose upstream answers 200 with `body` in `coding`; the raw answer (not decoded by the client). */
async function scenario(t: Test, styleName: string, body: string, coding = 'gzip') {
  const style = STREAM_STYLES[styleName]!;
  const gz = CODINGS[coding]!(body);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': coding, 'content-length': String(gz.length) });
    res.end(gz);
  });
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: [SECRET] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const response = await post(gw.url, style, keyValue);
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return { gw, gz, response, raw: Buffer.concat(chunks) };
}

for (const name of ['completions', 'messages']) {
  for (const coding of Object.keys(CODINGS)) {
    t.test(`${name} stream answered 200 with a ${coding} JSON error object echoing the secret: decoded and masked, its length the masked body's`, async (t) => {
      const { gw, response, raw } = await scenario(t, name, ERROR_BODY, coding);
      t.equal(response.statusCode, 200);
      t.equal(response.headers['content-encoding'], undefined, 'sent decoded');
      t.equal(raw.toString('utf8'), ERROR_BODY.split(SECRET).join(MASKED), '`***<last4>` in place of the secret');
      t.equal(response.headers['content-length'], String(raw.length), 'the masked body\'s length');
      const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
      t.match(record, { status: 200, error_code: 'upstream_stream_error' });
    });
  }
}

t.test('a gzip JSON answer to a stream request that is no error goes as sent, compressed', async (t) => {
  const success = JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
  const { gw, gz, response, raw } = await scenario(t, 'completions', success);
  t.equal(response.headers['content-encoding'], 'gzip');
  t.same(raw, gz, 'the bytes as sent');
  t.equal(gunzipSync(raw).toString('utf8'), success);
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: null, usage: { input_tokens: 5, output_tokens: 2 } });
});

t.test('a gzip JSON answer to a stream request past the capture limit once compressed is held no longer: it goes on as it arrives, compressed, whole and as sent', async (t) => {
  const style = STREAM_STYLES.completions!;
  // The relay's capture limit (forward-native.ts); random text compresses little, so the gzip passes it too.
  const captureLimit = 4 * 1024 * 1024;
  const content = randomBytes(captureLimit + captureLimit / 2).toString('base64');
  const body = JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
  const gz = gzipSync(body);
  const head = gz.subarray(0, captureLimit + 64 * 1024);
  t.ok(gz.length > head.length, 'compressed, still past the head');
  let clientHasHead!: () => void;
  const headSeen = new Promise<void>((resolve) => (clientHasHead = resolve));
  // The upstream sends the rest only once the client has the first bytes: a body still held until its end never would.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.write(head);
    void headSeen.then(() => res.end(gz.subarray(head.length)));
  });
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: [SECRET] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const response = await withTimeout(post(gw.url, style, keyValue), 10_000, 'the answer\'s head');
  t.equal(response.statusCode, 200);
  t.equal(response.headers['content-encoding'], 'gzip', 'sent compressed');
  const chunks: Buffer[] = [];
  const read = (async () => {
    for await (const chunk of response) {
      chunks.push(chunk as Buffer);
      clientHasHead();
    }
  })();
  await withTimeout(read, 10_000, 'the body, its first bytes before the upstream ends it');
  const raw = Buffer.concat(chunks);
  t.equal(raw.length, gz.length, 'every byte');
  t.ok(raw.equals(gz), 'as sent');
  const record = await waitForLog(gw, String(response.headers['x-switchyard-request-id']));
  t.match(record, { status: 200, error_code: null, usage: { input_tokens: 5, output_tokens: 2 } });
});

t.test('a gzip JSON answer to a stream request held for its end that stalls is ended at the idle timeout, with the gateway\'s error', async (t) => {
  const style = STREAM_STYLES.completions!;
  const gz = gzipSync(ERROR_BODY);
  // The body timeout's backstop ten minutes off: the idle timeout is what ends it.
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.write(gz.subarray(0, 10));
    },
    { streamIdleTimeoutMs: 300, headersTimeoutMs: 600_000 },
  );
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: [SECRET] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const answered = fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...style.headers(keyValue), 'content-type': 'application/json' }, body: JSON.stringify(style.body) });
  const res = await withTimeout(answered, 10_000, 'the answer at the idle timeout');
  t.equal(res.status, 504);
  t.match(JSON.parse(await withTimeout(res.text(), 10_000, 'the answer')), { error: { code: 'upstream_idle_timeout' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 504, error_code: 'upstream_idle_timeout' });
});
