import { request as httpRequest, type IncomingMessage } from 'node:http';
import t from 'tap';
import { seedRoute } from './helpers/data-plane-harness.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { startLoopbackServer } from './helpers/loopback-server.ts';
import { deferred, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { transcriptionRoute } from './helpers/transcription-route.ts';

// docs/data-plane.md step 3: a form's first attempt begins once its model is known and a file
// part begins after it, or the form ends. The small text fields up to there are routing's,
// wherever the model is: after the file (the SDKs' order) or before it (still streamed).

const BOUNDARY = 'AfterModelBoundary';
const part = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const FILE_HEAD = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
const CLOSE = `\r\n--${BOUNDARY}--\r\n`;
const EVENTS = [
  `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'Hi' })}\n\n`,
  `data: ${JSON.stringify({ type: 'transcript.text.done', text: 'Hi', usage: { type: 'tokens', input_tokens: 14, output_tokens: 3, total_tokens: 17 } })}\n\n`,
].join('');

t.test('a stream field that is not `true` or `false` is refused after the model too: after the file (the SDKs\' order) or between the model and the file', async (t) => {
  const { upstream, gw, post } = await transcriptionRoute(t, BOUNDARY);
  const forms = {
    'file, model, stream': `${FILE_HEAD}RIFF....\r\n${part('model', 'whisper-1')}${part('stream', '1')}--${BOUNDARY}--\r\n`,
    'model, stream, file': `${part('model', 'whisper-1')}${part('response_format', 'json')}${part('stream', 'True')}${FILE_HEAD}RIFF....${CLOSE}`,
  };
  for (const [order, form] of Object.entries(forms)) {
    const res = await post(Buffer.from(form));
    t.equal(res.status, 400, `${order}: refused`);
    t.match(await res.json(), { error: { code: 'invalid_request_body', message: /"stream"/ } }, `${order}: naming the field`);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 400, error_code: 'invalid_request_body', attempt_count: 0 });
  }
  t.equal(upstream.requests.length, 0, 'none went upstream');
  // A stream field after the file part is not read (the attempt has begun): the one before it counts.
  const res = await post(Buffer.from(`${part('model', 'whisper-1')}${part('stream', 'false')}${FILE_HEAD}RIFF....\r\n${part('stream', 'on')}--${BOUNDARY}--\r\n`));
  t.equal(res.status, 200, 'a field after the next file part is not read');
  t.equal(upstream.requests.length, 1);
});

t.test('a form with its model first still streams: the upstream has its first bytes before the upload ends, and the stream flag between the model and the file is read', async (t) => {
  const receiving = deferred();
  const upstream = await startLoopbackServer((req, res) => {
    req.once('data', () => receiving.resolve());
    req.resume();
    // Some compatible upstreams send their event stream as text/plain: read as one only when the gateway knows the request streams.
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(EVENTS)) }).end(EVENTS));
  });
  t.teardown(() => upstream.close());
  const gw = await gateway(t);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], protocols: ['x-suite'] });
  const head = Buffer.from(`${part('model', 'm')}${part('stream', 'true')}${part('response_format', 'json')}${FILE_HEAD}`);
  const whole = Buffer.concat([head, Buffer.alloc(200_000, 0x41), Buffer.from(CLOSE)]);
  const req = httpRequest(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(whole.length) } });
  const answered = new Promise<IncomingMessage>((resolve, reject) => req.on('response', resolve).on('error', reject));
  req.write(whole.subarray(0, 120_000));
  await withTimeout(receiving.promise, 5000, 'the upload to reach the upstream before it ends');
  req.end(whole.subarray(120_000));
  const res = await answered;
  let text = '';
  for await (const chunk of res) text += String(chunk);
  t.equal(res.statusCode, 200);
  t.equal(text, EVENTS, 'the events as sent');
  t.equal(res.headers['content-length'], undefined, "relayed as SSE, without the upstream's length: the stream flag was read");
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  t.same(record.usage, { input_tokens: 14, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 }, 'usage read from the done event');
});
