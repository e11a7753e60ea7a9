import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync, createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';
import { rig, writeJson } from './helpers/vendor-wire.ts';

// The official openai SDK (v6) as a client of the form operations and of answers that are not
// JSON: the form reaches the upstream byte for byte but the mapped model, and text and audio
// answers reach the SDK as the upstream sent them.

const bytes = (length: number, seed: number) => Buffer.from(Array.from({ length }, (_, i) => ((i + seed) * 2654435761) >>> 24));

t.test('images.edit with image[] files, a mask and every text field: the upstream gets the SDK bytes with only the model replaced', async (t) => {
  const r = await rig(t, { channel: 'ch09', protocols: ['x-images'], external: 'img', upstreamModel: 'gpt-image-1.5' }, (_req, res) => writeJson(res, 200, { created: 1, data: [{ b64_json: 'QUJD' }, { b64_json: 'REVG' }] }));
  let sent: Buffer | undefined;
  // Keeps the exact bytes the SDK sends (its form, its boundary) before sending them on.
  const recordingFetch = async (url: string | URL | Request, init?: RequestInit) => {
    const request = new Request(url, init);
    sent = Buffer.from(await request.arrayBuffer());
    return fetch(request.url, { method: request.method, headers: request.headers, body: sent, signal: init?.signal ?? null });
  };
  const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0, fetch: recordingFetch });

  const edited = await client.images.edit({
    image: [await toFile(bytes(300_000, 1), 'a.png', { type: 'image/png' }), await toFile(bytes(200_000, 2), 'b.png', { type: 'image/png' })],
    mask: await toFile(bytes(999, 3), 'm.png', { type: 'image/png' }),
    model: 'img',
    prompt: 'a red door ü',
    n: 2,
    size: '1024x1024',
    output_format: 'webp',
    output_compression: 50,
  });

  t.equal(edited.data?.length, 2);
  const seen = r.upstream.requests[0]!;
  const expected = Buffer.from(sent!.toString('latin1').replace('name="model"\r\n\r\nimg\r\n', 'name="model"\r\n\r\ngpt-image-1.5\r\n'), 'latin1');
  t.not(expected.length, sent!.length, 'the SDK sent the model field');
  t.ok(seen.body.equals(expected), 'byte for byte, the boundary and both image[] files included');
  t.equal(seen.headers['content-length'], String(expected.length));
  t.match(seen.headers['content-type'], /^multipart\/form-data; boundary=/);
});

t.test('transcriptions.create from fs.createReadStream with timestamp_granularities[]: verbose_json, then text and srt answers passed on as text', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sdk-form-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'speech.wav');
  const audio = bytes(250_000, 4);
  writeFileSync(file, audio);
  const SRT = '1\n00:00:00,000 --> 00:00:01,000\nhello\n\n';
  const r = await rig(t, { channel: 'ch03', protocols: ['x-suite'], external: 'stt', upstreamModel: 'whisper-1' }, (req, res) => {
    const format = /name="response_format"\r\n\r\n([a-z_]+)\r\n/.exec(req.body.toString('latin1'))?.[1];
    if (format === 'verbose_json') return writeJson(res, 200, { task: 'transcribe', language: 'english', duration: 1, text: 'hello', words: [{ word: 'hello', start: 0, end: 1 }], usage: { type: 'duration', seconds: 1 } });
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(format === 'srt' ? SRT : 'hello\n');
  });
  const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 });

  const verbose = await client.audio.transcriptions.create({ file: createReadStream(file), model: 'stt', response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
  t.match(verbose, { text: 'hello', words: [{ word: 'hello' }] });
  const form = r.upstream.requests[0]!.body.toString('latin1');
  t.ok(r.upstream.requests[0]!.body.includes(audio), 'the file read from disk arrives whole');
  t.match(form, /filename="speech\.wav"/);
  t.match(form, /name="model"\r\n\r\nwhisper-1\r\n/);
  t.match(form, /name="timestamp_granularities\[\]"\r\n\r\nword\r\n--[^\r]+\r\nContent-Disposition: form-data; name="timestamp_granularities\[\]"\r\n\r\nsegment\r\n/, 'both array entries, in order');

  for (const [format, text] of [['text', 'hello\n'], ['srt', SRT]] as const) {
    const { data, response } = await client.audio.transcriptions.create({ file: await toFile(audio, 'speech.wav'), model: 'stt', response_format: format }).withResponse();
    t.equal(data, text, `${format}: the SDK gets the text as sent`);
    t.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.match(await waitForLog(r.gw, response.headers.get('x-switchyard-request-id')), { status: 200, error_code: null, operation: 'audio-transcriptions', upstream_model: 'whisper-1' });
  }
});

t.test('audio.speech.create as a binary stream: mp3 and wav bytes and their content types reach response.body as sent', async (t) => {
  const audio = bytes(120_000, 5);
  const r = await rig(t, { channel: 'ch03', protocols: ['x-suite'], external: 'tts', upstreamModel: 'gpt-4o-mini-tts' }, (req, res) => {
    const { response_format: format } = JSON.parse(req.body.toString('utf8')) as { response_format: string };
    res.writeHead(200, { 'content-type': format === 'wav' ? 'audio/wav' : 'audio/mpeg' });
    res.write(audio.subarray(0, 60_000));
    res.end(audio.subarray(60_000));
  });
  const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 });

  for (const [format, type] of [['mp3', 'audio/mpeg'], ['wav', 'audio/wav']] as const) {
    const { data, response } = await client.audio.speech.create({ model: 'tts', input: 'Hello there', voice: 'alloy', response_format: format }).withResponse();
    const chunks: Buffer[] = [];
    for await (const chunk of data.body!) chunks.push(Buffer.from(chunk));
    t.ok(Buffer.concat(chunks).equals(audio), `${format}: the audio bytes as sent`);
    t.equal(response.headers.get('content-type'), type);
    t.match(await waitForLog(r.gw, response.headers.get('x-switchyard-request-id')), { status: 200, error_code: null, operation: 'audio-speech', upstream_model: 'gpt-4o-mini-tts' });
  }
});

t.test("a 400 the upstream answers to a form reaches the SDK as its BadRequestError, with the upstream's message, param and request id", async (t) => {
  const r = await rig(t, { channel: 'ch03', protocols: ['x-suite'], external: 'stt', upstreamModel: 'whisper-1' }, (_req, res) =>
    writeJson(res, 400, { error: { message: "Invalid file format. Supported formats: ['flac', 'mp3', 'wav']", type: 'invalid_request_error', param: 'file', code: 'invalid_value' } }, { 'x-request-id': 'req_up_1' }),
  );
  const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 });

  const error = await client.audio.transcriptions.create({ file: await toFile(bytes(5000, 6), 'speech.xyz'), model: 'stt' }).catch((err: unknown) => err);

  t.ok(error instanceof OpenAI.BadRequestError);
  const apiError = error as InstanceType<typeof OpenAI.BadRequestError>;
  t.match(apiError, { status: 400, code: 'invalid_value', param: 'file', requestID: 'req_up_1' });
  t.match(apiError.message, /Invalid file format/);
  t.match(await waitForLog(r.gw, apiError.headers.get('x-switchyard-request-id')), { status: 400, error_code: 'upstream_400', attempt_count: 1 });
});
