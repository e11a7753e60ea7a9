import t from 'tap';
import { StreamUsageAccumulator, isUsageOnlyChunk, requestStreamUsage, streamUsageMissing } from '../../src/usage/index.ts';
import { USAGE_STYLE_BY_PROTOCOL } from '../../src/dataplane/usage-style.ts';

function feed(style: ConstructorParameters<typeof StreamUsageAccumulator>[0], events: unknown[]) {
  const acc = new StreamUsageAccumulator(style);
  for (const e of events) acc.push(typeof e === 'string' ? e : JSON.stringify(e));
  return acc.result();
}

t.test('completions stream: final usage chunk', async (t) => {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null },
    { ...base, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }], usage: null },
    { ...base, choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }], usage: null },
    {
      ...base,
      choices: [],
      usage: {
        prompt_tokens: 19, completion_tokens: 10, total_tokens: 29,
        prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 },
      },
    },
    '[DONE]',
  ];
  t.same(feed('completions', events), { input_tokens: 19, output_tokens: 10, cached_tokens: 0, reasoning_tokens: 0 });
});

t.test('completions stream without usage reports none', async (t) => {
  t.equal(feed('completions', [{ choices: [{ index: 0, delta: { content: 'x' } }] }, '[DONE]']), undefined);
});

t.test('completions: push returns the parsed usage chunk once, isUsageOnlyChunk spots it', async (t) => {
  const acc = new StreamUsageAccumulator('completions');
  t.equal(acc.push('{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}'), undefined);
  const parsed = acc.push('{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}');
  t.ok(isUsageOnlyChunk(parsed));
  t.notOk(isUsageOnlyChunk({ choices: [{ index: 0 }], usage: { prompt_tokens: 1 } }));
  t.notOk(isUsageOnlyChunk({ choices: [], usage: null }));
  t.equal(acc.result()?.output_tokens, 2);
});

t.test('responses stream: response.completed', async (t) => {
  const events = [
    { type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', usage: null } },
    { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' },
    {
      type: 'response.completed',
      sequence_number: 9,
      response: {
        id: 'resp_1', status: 'completed',
        usage: {
          input_tokens: 37, input_tokens_details: { cached_tokens: 12 },
          output_tokens: 11, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 48,
        },
      },
    },
  ];
  t.same(feed('responses', events), { input_tokens: 37, output_tokens: 11, cached_tokens: 12, reasoning_tokens: 4 });
});

t.test('responses stream: text mentioning usage does not confuse it', async (t) => {
  t.equal(feed('responses', [{ type: 'response.output_text.delta', delta: '"type":"response.completed"' }]), undefined);
});

// OpenAI image streams (images.d.ts ImageGenStreamEvent, ImageEditStreamEvent): partial images,
// then a completed event whose top-level `usage` counts the whole request.
for (const prefix of ['image_generation', 'image_edit']) {
  t.test(`image stream: ${prefix}.completed carries the usage`, async (t) => {
    const image = { background: 'opaque', created_at: 1750000000, output_format: 'png', quality: 'high', size: '1024x1024' };
    const events = [
      { type: `${prefix}.partial_image`, b64_json: 'iVBORw0KGgo=', partial_image_index: 0, ...image },
      { type: `${prefix}.partial_image`, b64_json: 'iVBORw0KGgp=', partial_image_index: 1, ...image },
      {
        type: `${prefix}.completed`, b64_json: 'iVBORw0KGgq=', ...image,
        usage: { input_tokens: 50, input_tokens_details: { text_tokens: 40, image_tokens: 10 }, output_tokens: 4160, total_tokens: 4210 },
      },
    ];
    t.same(feed(USAGE_STYLE_BY_PROTOCOL['x-images']!, events), { input_tokens: 50, output_tokens: 4160, cached_tokens: 0, reasoning_tokens: 0, image_input_tokens: 10 });
    t.equal(feed(USAGE_STYLE_BY_PROTOCOL['x-images']!, events.slice(0, 2)), undefined, 'partial images carry none');
  });
}

t.test('messages stream: message_start + cumulative message_delta', async (t) => {
  const events = [
    {
      type: 'message_start',
      message: {
        id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-sonnet-4-20250514',
        stop_reason: null, stop_sequence: null,
        usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 2048, output_tokens: 1 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'ping' },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15 } },
    { type: 'message_stop' },
  ];
  t.same(feed('messages', events), { input_tokens: 2073, output_tokens: 15, cached_tokens: 2048, reasoning_tokens: 0 });
});

t.test('messages stream: message_delta with cumulative input counters overrides', async (t) => {
  const events = [
    { type: 'message_start', message: { usage: { input_tokens: 10, cache_read_input_tokens: 0, output_tokens: 1 } } },
    { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { input_tokens: 12, cache_read_input_tokens: 5, output_tokens: 40 } },
  ];
  t.same(feed('messages', events), { input_tokens: 17, output_tokens: 40, cached_tokens: 5, reasoning_tokens: 0 });
});

t.test('messages stream: a message_delta reporting input_tokens 0 keeps message_start\'s input', async (t) => {
  const events = [
    { type: 'message_start', message: { usage: { input_tokens: 1200, cache_read_input_tokens: 300, cache_creation_input_tokens: 0, output_tokens: 1 } } },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 0, output_tokens: 62 } },
  ];
  t.same(feed('messages', events), { input_tokens: 1500, output_tokens: 62, cached_tokens: 300, reasoning_tokens: 0 });
});

t.test('generate stream: last usageMetadata wins', async (t) => {
  const chunk = (text: string, usage: Record<string, number>) => ({
    candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0 }],
    usageMetadata: usage,
    modelVersion: 'gemini-2.5-pro',
  });
  const events = [
    chunk('The', { promptTokenCount: 8, totalTokenCount: 8 }),
    chunk(' sky', { promptTokenCount: 8, candidatesTokenCount: 2, totalTokenCount: 10 }),
    chunk(' is blue', { promptTokenCount: 8, candidatesTokenCount: 5, thoughtsTokenCount: 30, cachedContentTokenCount: 4, totalTokenCount: 43 }),
  ];
  t.same(feed('generate', events), { input_tokens: 8, output_tokens: 35, cached_tokens: 4, reasoning_tokens: 30 });
});

t.test('x-suite streams: transcript.text.done, speech.audio.done and a FIM usage chunk', async (t) => {
  t.equal(USAGE_STYLE_BY_PROTOCOL['x-suite'], 'suite');
  // audio.transcriptions.create({stream: true}): deltas, then transcript.text.done with usage (openai TranscriptionTextDoneEvent).
  const transcript = [
    { type: 'transcript.text.delta', delta: 'hel' },
    { type: 'transcript.text.delta', delta: 'lo' },
    { type: 'transcript.text.done', text: 'hello', usage: { type: 'tokens', input_tokens: 14, output_tokens: 45, total_tokens: 59, input_token_details: { text_tokens: 4, audio_tokens: 10 } } },
  ];
  t.same(feed('suite', transcript), { input_tokens: 14, output_tokens: 45, cached_tokens: 0, reasoning_tokens: 0, audio_input_tokens: 10 });
  // audio.speech.create({stream_format: 'sse'}): speech.audio.delta events, then speech.audio.done with usage.
  const speech = [
    { type: 'speech.audio.delta', audio: 'UklGRiQAAABXQVZF' },
    { type: 'speech.audio.done', usage: { input_tokens: 7, output_tokens: 260, total_tokens: 267 } },
  ];
  t.same(feed('suite', speech), { input_tokens: 7, output_tokens: 260, cached_tokens: 0, reasoning_tokens: 0 });
  const fim = [
    { id: 'f1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x' } }] },
    { id: 'f1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } },
    '[DONE]',
  ];
  t.same(feed('suite', fim), { input_tokens: 11, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 });
  // The same events read from their bytes, as the SSE relay does.
  for (const [name, events, expected] of [['transcript', transcript, 14], ['speech', speech, 7]] as const) {
    const acc = new StreamUsageAccumulator('suite');
    for (const e of events) {
      const bytes = Buffer.from(JSON.stringify(e));
      if (acc.pushBytes(bytes, 0, bytes.length) === undefined) acc.push(bytes.toString());
    }
    t.equal(acc.result()?.input_tokens, expected, `${name} from bytes`);
  }
});

t.test('malformed data is ignored', async (t) => {
  t.equal(feed('generate', ['{"usageMetadata": {broken']), undefined);
});

t.test('requestStreamUsage', async (t) => {
  const body: Record<string, unknown> = { model: 'm', stream: true, messages: [] };
  t.equal(requestStreamUsage(body), true);
  t.same(body['stream_options'], { include_usage: true });
  t.equal(requestStreamUsage(body), false, 'already asked');
  const keep: Record<string, unknown> = { stream: true, stream_options: { include_obfuscation: false } };
  t.equal(requestStreamUsage(keep), true);
  t.same(keep['stream_options'], { include_obfuscation: false, include_usage: true });
  const nonStream: Record<string, unknown> = { stream: false };
  t.equal(requestStreamUsage(nonStream), false);
  t.notOk('stream_options' in nonStream);
});

t.test('streamUsageMissing only reads the body', async (t) => {
  const asked = { stream: true, stream_options: { include_usage: true } };
  const cases: Array<[Record<string, unknown>, boolean]> = [
    [{ stream: true }, true],
    [{ stream: true, stream_options: { include_usage: false } }, true],
    [{ stream: true, stream_options: null }, true],
    [{ stream: true, stream_options: 'yes' }, true],
    [asked, false],
    [{ stream: false }, false],
    [{ stream: 'true' }, false],
  ];
  for (const [body, missing] of cases) {
    const before = JSON.stringify(body);
    t.equal(streamUsageMissing(body), missing, before);
    t.equal(JSON.stringify(body), before, 'body unchanged');
  }
});
