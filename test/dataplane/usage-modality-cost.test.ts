import t, { type Test } from 'tap';
import { computeCost, loggedUsage, type ModelPrice } from '../../src/usage/index.ts';
import { pricedRequest, usd } from './helpers/priced-request.ts';

// Audio and image tokens are priced at the model's audio and image rates, through the real data
// plane: the upstream answers a vendor's shape, the record's cost is the sum at each rate.

// gpt-4o-audio-preview: text $2.50 / $10, audio $40 / $80 per million (OpenAI's price page).
const AUDIO_CHAT: ModelPrice = { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25, audio_input_per_mtok: 40, audio_output_per_mtok: 80 };
const { audio_input_per_mtok: _ai, audio_output_per_mtok: _ao, ...TEXT_ONLY } = AUDIO_CHAT;

// OpenAI CompletionUsage of an audio answer: audio_tokens in both details, text_tokens beside them.
const chatUsage = {
  prompt_tokens: 1_200, completion_tokens: 700, total_tokens: 1_900,
  prompt_tokens_details: { cached_tokens: 100, audio_tokens: 900, text_tokens: 300, image_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 600, text_tokens: 100, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
// Cached first (100), then audio (900 of the 1100 left), the rest (200) at the input price.
const CHAT_COST = usd([100, 1.25], [900, 40], [200, 2.5], [600, 80], [100, 10]);

const CHAT_BODY = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'vendor-m', choices: [{ index: 0, message: { role: 'assistant', content: null, audio: { id: 'audio_1', data: 'UklGRg==', expires_at: 1, transcript: 'hi' } }, finish_reason: 'stop' }], usage: chatUsage });
// The usage chunk's bytes are read without JSON.parse (scanUsageEvent): the nested audio counts too.
const CHAT_STREAM = [
  `data: ${JSON.stringify({ id: 'chatcmpl-2', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { audio: { id: 'audio_2', data: 'UklGRg==' } }, finish_reason: null }] })}\n\n`,
  `data: ${JSON.stringify({ id: 'chatcmpl-2', object: 'chat.completion.chunk', choices: [], usage: chatUsage })}\n\n`,
  'data: [DONE]\n\n',
].join('');

for (const stream of [false, true]) {
  const chat = (t: Test, price: ModelPrice) => pricedRequest(t, {
    channel: 'ch02', protocol: 'x-completions', path: '/v1/chat/completions', price,
    reply: stream ? CHAT_STREAM : CHAT_BODY, contentType: stream ? 'text/event-stream' : 'application/json',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team-m', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }),
  });

  t.test(`completions ${stream ? 'stream' : 'body'}: audio input and output at the audio rates`, async (t) => {
    const record = await chat(t, AUDIO_CHAT);
    t.equal(record.cost, CHAT_COST);
    // The record keeps its four counters: the audio counts price it and are not stored.
    t.same(record.usage, { input_tokens: 1_200, output_tokens: 700, cached_tokens: 100, reasoning_tokens: 0 });
  });

  t.test(`completions ${stream ? 'stream' : 'body'}: without audio rates, priced as before`, async (t) => {
    const record = await chat(t, TEXT_ONLY);
    t.equal(record.cost, usd([100, 1.25], [1_100, 2.5], [700, 10]));
  });
}

// gpt-image-1: text input $5, image input $10, output $40 per million.
const IMAGE: ModelPrice = { input_per_mtok: 5, output_per_mtok: 40, image_input_per_mtok: 10 };
// OpenAI ImagesResponse.usage of an edit: the input image's tokens among input_tokens.
const editUsage = { input_tokens: 1_400, input_tokens_details: { text_tokens: 60, image_tokens: 1_340 }, output_tokens: 4_160, total_tokens: 5_560 };
const EDIT_BODY = JSON.stringify({ created: 1_750_000_000, data: [{ b64_json: 'iVBORw0KGgo=' }], size: '1024x1024', quality: 'high', output_format: 'png', usage: editUsage });

function editForm(): FormData {
  const form = new FormData();
  form.append('model', 'team-m');
  form.append('prompt', 'add a lighthouse');
  form.append('image', new Blob([Buffer.from('89504e470d0a1a0a', 'hex')], { type: 'image/png' }), 'in.png');
  return form;
}

t.test('image edit: image input tokens at the image rate, the text at the input price', async (t) => {
  const record = await pricedRequest(t, { channel: 'ch09', protocol: 'x-images', path: '/v1/images/edits', price: IMAGE, reply: EDIT_BODY, body: editForm() });
  t.equal(record.cost, usd([60, 5], [1_340, 10], [4_160, 40]));
  t.same(record.usage, { input_tokens: 1_400, output_tokens: 4_160, cached_tokens: 0, reasoning_tokens: 0 });
});

t.test('image edit: without an image rate, priced as before', async (t) => {
  const record = await pricedRequest(t, { channel: 'ch09', protocol: 'x-images', path: '/v1/images/edits', price: { input_per_mtok: 5, output_per_mtok: 40 }, reply: EDIT_BODY, body: editForm() });
  t.equal(record.cost, usd([1_400, 5], [4_160, 40]));
});

// gpt-4o-transcribe: text input $2.50, audio input $6, output $10 per million.
const TRANSCRIBE: ModelPrice = { input_per_mtok: 2.5, output_per_mtok: 10, audio_input_per_mtok: 6 };
// OpenAI Transcription usage of type tokens: input_token_details (singular) with audio_tokens.
const TRANSCRIPTION_BODY = JSON.stringify({ text: 'hello there', usage: { type: 'tokens', input_tokens: 1_014, output_tokens: 45, total_tokens: 1_059, input_token_details: { text_tokens: 14, audio_tokens: 1_000 } } });

function audioForm(): FormData {
  const form = new FormData();
  form.append('model', 'team-m');
  form.append('file', new Blob([Buffer.from('RIFF0000WAVE')], { type: 'audio/wav' }), 'in.wav');
  return form;
}

t.test('transcription: audio input tokens at the audio rate', async (t) => {
  const record = await pricedRequest(t, { channel: 'ch03', protocol: 'x-suite', path: '/v1/audio/transcriptions', price: TRANSCRIBE, reply: TRANSCRIPTION_BODY, body: audioForm() });
  t.equal(record.cost, usd([14, 2.5], [1_000, 6], [45, 10]));
  t.same(record.usage, { input_tokens: 1_014, output_tokens: 45, cached_tokens: 0, reasoning_tokens: 0 });
});

t.test('transcription: without an audio rate, priced as before', async (t) => {
  const record = await pricedRequest(t, { channel: 'ch03', protocol: 'x-suite', path: '/v1/audio/transcriptions', price: { input_per_mtok: 2.5, output_per_mtok: 10 }, reply: TRANSCRIPTION_BODY, body: audioForm() });
  t.equal(record.cost, usd([1_014, 2.5], [45, 10]));
});

// Mistral's transcription usage (voxtral): `prompt_tokens` counts the text prompt only; the
// audio's tokens are in `total_tokens` alone, and `prompt_tokens_details.cached_tokens` (cached
// audio) may exceed `prompt_tokens` (docs.mistral.ai/api, TranscriptionResponse.usage).
const MISTRAL_TRANSCRIPTION_USAGE = { prompt_audio_seconds: 5, prompt_tokens: 5, total_tokens: 404, completion_tokens: 24, prompt_tokens_details: { cached_tokens: 368 } };
const VOXTRAL: ModelPrice = { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1, audio_input_per_mtok: 6 };
// 375 audio tokens (404 less the 5 prompt and 24 output), 368 of the 380 input cached: 12 audio left.
const VOXTRAL_COST = usd([368, 1], [12, 6], [24, 10]);

for (const stream of [false, true]) {
  t.test(`transcription from Mistral${stream ? ', streamed' : ''}: the audio tokens only total_tokens counts are input, at the audio rate`, async (t) => {
    const reply = stream
      ? `event: transcription.text.delta\ndata: ${JSON.stringify({ type: 'transcription.text.delta', text: 'The sun' })}\n\n` +
        `event: transcription.done\ndata: ${JSON.stringify({ type: 'transcription.done', model: 'vendor-m', text: 'The sun', language: null, usage: MISTRAL_TRANSCRIPTION_USAGE })}\n\n`
      : JSON.stringify({ model: 'vendor-m', text: 'The sun', language: null, segments: [], usage: MISTRAL_TRANSCRIPTION_USAGE });
    const form = audioForm();
    if (stream) form.append('stream', 'true');
    const record = await pricedRequest(t, { channel: 'ch03', protocol: 'x-suite', path: '/v1/audio/transcriptions', price: VOXTRAL, reply, contentType: stream ? 'text/event-stream' : 'application/json', body: form });
    t.same(record.usage, { input_tokens: 380, output_tokens: 24, cached_tokens: 368, reasoning_tokens: 0 });
    t.equal(record.cost, VOXTRAL_COST);
  });
}

t.test('FIM from Mistral, whose total is its prompt and completion: nothing more is counted', async (t) => {
  const reply = JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'vendor-m', created: 1, choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  const record = await pricedRequest(t, { channel: 'ch03', protocol: 'x-suite', path: '/v1/fim/completions', price: VOXTRAL, reply, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', prompt: 'def f(', suffix: 'return 1' }) });
  t.same(record.usage, { input_tokens: 10, output_tokens: 5, cached_tokens: 0, reasoning_tokens: 0 });
  t.equal(record.cost, usd([10, 2.5], [5, 10]));
});

t.test('computeCost: the parts never exceed their whole, taken in order (cached, writes, audio, images)', async (t) => {
  const price: ModelPrice = { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 10, cache_write_per_mtok: 100, audio_input_per_mtok: 1_000, image_input_per_mtok: 10_000, audio_output_per_mtok: 20 };
  const usage = { input_tokens: 1_000, output_tokens: 50, cached_tokens: 300, reasoning_tokens: 0, cache_write_tokens: 200, audio_input_tokens: 400, image_input_tokens: 400, audio_output_tokens: 80 };
  // 300 cached, 200 written, 400 audio, then 100 of the 400 images; the output's audio is clamped to 50.
  t.equal(computeCost(usage, price), usd([300, 10], [200, 100], [400, 1_000], [100, 10_000], [50, 20]));
  t.equal(computeCost({ ...usage, audio_input_tokens: 5_000 }, price), usd([300, 10], [200, 100], [500, 1_000], [50, 20]), 'audio alone takes the rest, images none');
  t.equal(
    computeCost({ input_tokens: 1_000, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0, image_input_tokens: 100 }, { input_per_mtok: 1, output_per_mtok: 2 }),
    usd([1_000, 1], [50, 2]),
    'no rates: every token at the input or output price',
  );
});

t.test('computeCost: cached audio is priced once, as cached, and leaves the audio count', async (t) => {
  const price: ModelPrice = { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 10, audio_input_per_mtok: 1_000 };
  const usage = { input_tokens: 1_000, output_tokens: 0, cached_tokens: 300, reasoning_tokens: 0, audio_input_tokens: 700, cached_audio_tokens: 200 };
  // 300 cached (200 of them audio), so 500 of the 700 audio are uncached; 200 text at the input price.
  t.equal(computeCost(usage, price), usd([300, 10], [500, 1_000], [200, 1]));
  t.equal(computeCost({ ...usage, cached_audio_tokens: 900 }, price), usd([300, 10], [400, 1_000], [300, 1]), 'cached audio counts only up to the cached tokens');
  t.equal(computeCost({ ...usage, audio_input_tokens: 100 }, price), usd([300, 10], [700, 1]), 'an audio count below its cached part prices no uncached audio');
});

t.test('loggedUsage: the four counters whatever optional ones are present, the usage itself when none is', async (t) => {
  const four = { input_tokens: 10, output_tokens: 5, cached_tokens: 2, reasoning_tokens: 1 };
  for (const extra of [{ audio_input_tokens: 3 }, { cached_audio_tokens: 3 }, { image_input_tokens: 3 }, { audio_output_tokens: 3 }, { cache_write_tokens: 3 }]) {
    t.same(loggedUsage({ ...four, ...extra }), four, Object.keys(extra)[0]!);
  }
  const plain = { ...four };
  t.equal(loggedUsage(plain), plain, 'no copy');
});
