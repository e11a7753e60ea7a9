import t, { type Test } from 'tap';
import OpenAI, { toFile } from 'openai';
import { Stream } from 'openai/core/streaming';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';
import { writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// docs/data-plane.md step 9: a transcription stream ends with its done event (the whole text and
// the usage), a speech stream with speech.audio.done (the usage); one the upstream ends cleanly
// before it was cut short, and the client's SDK is told so rather than left without the end.
// A FIM stream is completions chunks and, like a chat completions stream, owes no [DONE].

const event = (data: Record<string, unknown>): SseFrame => ({ event: data['type'] as string, data });
const OPENAI_USAGE = { type: 'tokens', input_tokens: 14, output_tokens: 3, total_tokens: 17 };
const MISTRAL_USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };

async function route(t: Test, frames: readonly SseFrame[]) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => writeSse(res, frames));
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], protocols: ['x-suite'] });
  return { gw, client: new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 }) };
}

/** The types of the events an SDK stream yields (a chunk's `object`), and what it raised after them. */
async function drain(stream: AsyncIterable<unknown>) {
  const types: unknown[] = [];
  const error = await (async () => {
    for await (const e of stream) {
      const { type, object } = e as { type?: unknown; object?: unknown };
      types.push(type ?? object);
    }
  })().catch((err: unknown) => err);
  return { types, error };
}

async function transcription(t: Test, frames: readonly SseFrame[]) {
  const { gw, client } = await route(t, frames);
  const { data: stream, response } = await client.audio.transcriptions
    .create({ file: await toFile(Buffer.alloc(2000, 7), 'a.mp3', { type: 'audio/mpeg' }), model: 'team-m', stream: true })
    .withResponse();
  const { types, error } = await drain(stream);
  return { types, error, record: await waitForLog(gw, response.headers.get('x-switchyard-request-id')) };
}

async function speech(t: Test, frames: readonly SseFrame[]) {
  const { gw, client } = await route(t, frames);
  const { data, response } = await client.audio.speech.create({ model: 'team-m', input: 'Hello there', voice: 'alloy', stream_format: 'sse' }).withResponse();
  const { types, error } = await drain(Stream.fromSSEResponse(data, new AbortController()));
  return { types, error, record: await waitForLog(gw, response.headers.get('x-switchyard-request-id')) };
}

function cutShort(t: Test, got: { types: unknown[]; error: unknown; record: unknown }, types: unknown[]) {
  t.same(got.types, types, 'the events the upstream sent reach the SDK');
  t.ok(got.error instanceof OpenAI.APIError, 'the SDK raises the error event that follows');
  t.equal((got.error as InstanceType<typeof OpenAI.APIError>).code, 'upstream_stream_broken');
  t.match(got.record, { status: 200, error_code: 'upstream_stream_broken' });
}

const TRANSCRIPTIONS = {
  // OpenAI: transcript.text.delta ... transcript.text.done (TranscriptionStreamEvent).
  openai: { delta: event({ type: 'transcript.text.delta', delta: 'Hi' }), done: event({ type: 'transcript.text.done', text: 'Hi', usage: OPENAI_USAGE }) },
  // Mistral: transcription.language, transcription.text.delta ... transcription.done.
  mistral: { delta: event({ type: 'transcription.text.delta', text: 'Hi' }), done: event({ type: 'transcription.done', model: 'vendor-m', text: 'Hi', language: null, usage: MISTRAL_USAGE }) },
};

for (const [vendor, { delta, done }] of Object.entries(TRANSCRIPTIONS)) {
  t.test(`${vendor} transcription: a stream that ends cleanly after its deltas, before its done event, was cut short`, async (t) => {
    cutShort(t, await transcription(t, [delta, delta]), [delta.event, delta.event]);
  });

  t.test(`${vendor} transcription: a stream that ends with its done event is whole, with its usage`, async (t) => {
    const { types, error, record } = await transcription(t, [delta, done]);
    t.same(types, [delta.event, done.event]);
    t.equal(error, undefined);
    t.match(record, { status: 200, error_code: null, usage: { input_tokens: vendor === 'openai' ? 14 : 5, output_tokens: 3 } });
  });
}

t.test('a transcription stream of completions-style chunks that ends with [DONE] (as compatible servers send one) is whole', async (t) => {
  const chunk = { id: 'trsc-1', object: 'transcription.chunk', created: 1, model: 'vendor-m', choices: [{ delta: { content: 'Hi' } }] };
  const { types, error, record } = await transcription(t, [{ data: chunk }, { data: '[DONE]' }]);
  t.same(types, ['transcription.chunk']);
  t.equal(error, undefined);
  t.match(record, { status: 200, error_code: null });
});

t.test('speech: a stream that ends cleanly after its audio deltas, before speech.audio.done, was cut short', async (t) => {
  cutShort(t, await speech(t, [event({ type: 'speech.audio.delta', audio: 'SUQzBAAA' })]), ['speech.audio.delta']);
});

t.test('speech: a stream that ends with speech.audio.done is whole, with its usage', async (t) => {
  const { types, error, record } = await speech(t, [event({ type: 'speech.audio.delta', audio: 'SUQzBAAA' }), event({ type: 'speech.audio.done', usage: { input_tokens: 9, output_tokens: 4, total_tokens: 13 } })]);
  t.same(types, ['speech.audio.delta', 'speech.audio.done']);
  t.equal(error, undefined);
  t.match(record, { status: 200, error_code: null, usage: { input_tokens: 9, output_tokens: 4 } });
});

t.test('FIM: a stream of completions chunks that ends without [DONE] is whole, as a chat completions stream is', async (t) => {
  const chunk = (content: string, finish: string | null) => ({ data: { id: 'fim-1', object: 'chat.completion.chunk', created: 1, model: 'vendor-m', choices: [{ index: 0, delta: { content }, finish_reason: finish }] } });
  const { gw, client } = await route(t, [chunk('return', null), { data: { ...chunk(' 1', 'stop').data, usage: MISTRAL_USAGE } }]);
  const { data: stream, response } = await client
    .post<Stream<unknown>>('/fim/completions', { body: { model: 'team-m', prompt: 'def f(', suffix: 'return 1', stream: true }, stream: true })
    .withResponse();
  const { types, error } = await drain(stream);
  t.same(types, ['chat.completion.chunk', 'chat.completion.chunk']);
  t.equal(error, undefined);
  t.match(await waitForLog(gw, response.headers.get('x-switchyard-request-id')), { status: 200, error_code: null, operation: 'fim-completions', usage: { input_tokens: 5, output_tokens: 3 } });
});
