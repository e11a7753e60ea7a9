import t from 'tap';
import OpenAI, { toFile } from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';

// docs/data-plane.md step 3: the official SDK sends a form's text fields in the order it is
// given them, the file first and `stream`, `n`, `response_format` after the model. Routing
// reads them there too: the first attempt begins at the next file part or the form's end.

const EVENTS = [
  `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'Hi' })}\n\n`,
  `data: ${JSON.stringify({ type: 'transcript.text.done', text: 'Hi', usage: { type: 'tokens', input_tokens: 14, output_tokens: 3, total_tokens: 17 } })}\n\n`,
].join('');

t.test('transcriptions.create({ file, model, stream: true, response_format }): the stream flag after the model is read, so a stream answered under text/plain is read as one', async (t) => {
  // Some compatible upstreams send their event stream as text/plain: only a request the gateway
  // knows to be a stream has it relayed as SSE, its usage read.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(EVENTS)) });
    res.end(EVENTS);
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'team-stt', upstream: 'gpt-4o-transcribe' }], protocols: ['x-suite'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  const { data: stream, response } = await client.audio.transcriptions
    .create({ file: await toFile(Buffer.alloc(4000, 9), 'speech.mp3', { type: 'audio/mpeg' }), model: 'team-stt', stream: true, response_format: 'json' })
    .withResponse();
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);

  t.same(types, ['transcript.text.delta', 'transcript.text.done']);
  const text = upstream.requests[0]!.body.toString('latin1');
  t.ok(text.indexOf('filename="speech.mp3"') < text.indexOf('name="model"') && text.indexOf('name="model"') < text.indexOf('name="stream"'), 'the SDK sent the file, the model, then the stream flag');
  t.equal(response.headers.get('content-length'), null, "relayed as SSE, without the upstream's length");
  const record = await waitForLog(gw, response.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, { input_tokens: 14, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 }, 'usage read from the done event');
});

t.test('images.edit({ image, model, prompt, n: 2 }) on a Group whose channel note refuses more than one image: refused for n, read after the model', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  // ch15's IMG is C (note 1): single image, non-streaming, Base64, no editing; `n` is its first rule an edit of 2 meets.
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  const error = await client.images.edit({ image: await toFile(Buffer.alloc(2000, 7), 'in.png', { type: 'image/png' }), model: 'img', prompt: 'a red square', n: 2 }).catch((err: unknown) => err);

  t.ok(error instanceof OpenAI.BadRequestError, 'a 400');
  const apiError = error as InstanceType<typeof OpenAI.BadRequestError>;
  t.equal(apiError.code, 'restricted_by_channel_note');
  t.match(apiError.message, /image_count > 1/, 'the rule on n, sent after the model, applied');
  t.equal(upstream.requests.length, 0, 'nothing went upstream');
});
