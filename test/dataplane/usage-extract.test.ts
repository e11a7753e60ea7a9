import t from 'tap';
import { extractUsage, extractUsageFromBytes, extractUsageFromHead, extractUsageFromTail, extractUsageFromText } from '../../src/usage/index.ts';
import { USAGE_STYLE_BY_PROTOCOL } from '../../src/dataplane/usage-style.ts';

t.test('completions body', async (t) => {
  const body = {
    id: 'chatcmpl-abc',
    object: 'chat.completion',
    created: 1741569952,
    model: 'gpt-4.1-2025-04-14',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 128, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
  };
  t.same(extractUsage('completions', body), { input_tokens: 1200, output_tokens: 300, cached_tokens: 1024, reasoning_tokens: 128 });
});

t.test('completions body without details, and without usage', async (t) => {
  t.same(extractUsage('completions', { usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }), {
    input_tokens: 9, output_tokens: 2, cached_tokens: 0, reasoning_tokens: 0,
  });
  t.equal(extractUsage('completions', { choices: [] }), undefined);
  t.equal(extractUsage('completions', { usage: null }), undefined);
  t.equal(extractUsage('completions', 'not an object'), undefined);
});

t.test('responses body', async (t) => {
  const body = {
    id: 'resp_67ccd2bed1ec8190b14f964abc054267',
    object: 'response',
    status: 'completed',
    model: 'o4-mini-2025-04-16',
    output: [],
    usage: {
      input_tokens: 328,
      input_tokens_details: { cached_tokens: 256 },
      output_tokens: 52,
      output_tokens_details: { reasoning_tokens: 40 },
      total_tokens: 380,
    },
  };
  t.same(extractUsage('responses', body), { input_tokens: 328, output_tokens: 52, cached_tokens: 256, reasoning_tokens: 40 });
});

t.test('images body: top-level usage (images.d.ts ImagesResponse.Usage)', async (t) => {
  const body = {
    created: 1750000000,
    background: 'opaque',
    data: [{ b64_json: 'iVBORw0KGgo=' }],
    output_format: 'png',
    quality: 'high',
    size: '1024x1024',
    usage: {
      input_tokens: 50,
      input_tokens_details: { text_tokens: 40, image_tokens: 10 },
      output_tokens: 4160,
      output_tokens_details: { text_tokens: 0, image_tokens: 4160 },
      total_tokens: 4210,
    },
  };
  const style = USAGE_STYLE_BY_PROTOCOL['x-images']!;
  const expected = { input_tokens: 50, output_tokens: 4160, cached_tokens: 0, reasoning_tokens: 0, image_input_tokens: 10 };
  t.same(extractUsage(style, body), expected);
  t.same(extractUsageFromBytes(style, Buffer.from(JSON.stringify(body))), expected, 'from the bytes, as the relay reads it');
});

t.test('messages body sums cache reads and writes into input', async (t) => {
  const body = {
    id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-20250514',
    content: [{ type: 'text', text: 'Hello' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: 21,
      cache_creation_input_tokens: 188,
      cache_read_input_tokens: 1000,
      output_tokens: 393,
      service_tier: 'standard',
    },
  };
  t.same(extractUsage('messages', body), { input_tokens: 1209, output_tokens: 393, cached_tokens: 1000, reasoning_tokens: 0, cache_write_tokens: 188 });
});

t.test('generate body adds thoughts to output', async (t) => {
  const body = {
    candidates: [{ content: { parts: [{ text: 'Hi' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: 4000,
      candidatesTokenCount: 120,
      totalTokenCount: 4520,
      cachedContentTokenCount: 3500,
      thoughtsTokenCount: 400,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 4000 }],
    },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'abc',
  };
  t.same(extractUsage('generate', body), { input_tokens: 4000, output_tokens: 520, cached_tokens: 3500, reasoning_tokens: 400 });
});

t.test('embeddings body', async (t) => {
  const body = {
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2] }],
    model: 'text-embedding-3-small',
    usage: { prompt_tokens: 8, total_tokens: 8 },
  };
  t.same(extractUsage('embeddings', body), { input_tokens: 8, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
});

t.test('rerank body: the usage total is the input, whether or not prompt_tokens is sent beside it', async (t) => {
  t.equal(USAGE_STYLE_BY_PROTOCOL['rerank'], 'rerank');
  const results = [{ index: 1, relevance_score: 0.92 }, { index: 0, relevance_score: 0.11 }];
  // A total only (as Jina and Voyage answer), and prompt, completion and total (as other /v1/rerank upstreams do).
  for (const usage of [{ total_tokens: 37 }, { prompt_tokens: 37, completion_tokens: 0, total_tokens: 37 }]) {
    const body = { id: 'rr-1', model: 'rerank-m', results, usage };
    const expected = { input_tokens: 37, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
    t.same(extractUsage('rerank', body), expected, JSON.stringify(usage));
    t.same(extractUsageFromBytes('rerank', Buffer.from(JSON.stringify(body))), expected, `${JSON.stringify(usage)} from bytes`);
  }
});

t.test('rerank body without usage: SiliconFlow\'s top-level tokens, else meta.tokens, from every reading', async (t) => {
  const results = [{ index: 0, relevance_score: 0.5, document: { text: 'x'.repeat(100) } }];
  const expected = { input_tokens: 40, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
  for (const body of [{ id: 'rr', results, tokens: { input_tokens: 40, output_tokens: 0 } }, { id: 'rr', results, meta: { tokens: { input_tokens: 40, output_tokens: 0 } } }]) {
    const text = JSON.stringify(body);
    t.same(extractUsage('rerank', body), expected, 'parsed');
    t.same(extractUsageFromText('rerank', text), expected, 'text');
    t.same(extractUsageFromBytes('rerank', Buffer.from(text)), expected, 'bytes');
  }
  // A large answer's tail (cut mid-string) and head: the top-level `tokens` member is read from either.
  const tail = Buffer.from(`${'y'.repeat(50)}"}}],"tokens":{"input_tokens":40,"output_tokens":0}}`);
  t.same(extractUsageFromTail('rerank', tail), expected, 'tail');
  t.same(extractUsageFromHead('rerank', Buffer.from(`{"tokens":{"input_tokens":40},"results":[{"index":0,"document":{"text":"yyy`)), expected, 'head');
  t.equal(extractUsage('rerank', { id: 'rr', results, meta: { billed_units: { search_units: 1 } } }), undefined, 'Cohere: search units only');
});

t.test('x-suite body: OpenAI audio names and completions names both read, a duration usage counts nothing', async (t) => {
  t.equal(USAGE_STYLE_BY_PROTOCOL['x-suite'], 'suite');
  const cases: Array<[string, unknown, object]> = [
    // audio.transcriptions.create for a token-billed model (openai Transcription.Tokens).
    ['transcription tokens', {
      text: 'hello there',
      usage: { type: 'tokens', input_tokens: 14, output_tokens: 45, total_tokens: 59, input_token_details: { text_tokens: 4, audio_tokens: 10 } },
    }, { input_tokens: 14, output_tokens: 45, cached_tokens: 0, reasoning_tokens: 0, audio_input_tokens: 10 }],
    // OCR and Mistral-style transcriptions answer the completions names.
    ['ocr', { pages: [{ index: 0, markdown: '# A' }], model: 'ocr-m', usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 } },
      { input_tokens: 120, output_tokens: 30, cached_tokens: 0, reasoning_tokens: 0 }],
    ['fim with cache', { choices: [], usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55, prompt_tokens_details: { cached_tokens: 32 } } },
      { input_tokens: 50, output_tokens: 5, cached_tokens: 32, reasoning_tokens: 0 }],
    ['transcription duration', { text: 'hi', usage: { type: 'duration', seconds: 3 } },
      { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 }],
  ];
  for (const [name, body, expected] of cases) {
    t.same(extractUsage('suite', body), expected, name);
    t.same(extractUsageFromBytes('suite', Buffer.from(JSON.stringify(body))), expected, `${name} from bytes`);
  }
});

t.test('ignores counters that are not non-negative numbers', async (t) => {
  t.same(extractUsage('completions', { usage: { prompt_tokens: '12', completion_tokens: -1 } }), {
    input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0,
  });
});

t.test('from text', async (t) => {
  t.same(extractUsageFromText('embeddings', '{"usage":{"prompt_tokens":3,"total_tokens":3}}')?.input_tokens, 3);
  t.equal(extractUsageFromText('embeddings', '<html>bad gateway</html>'), undefined);
});

t.test('from a tail: the last bytes of a large images body, starting mid-string', async (t) => {
  const style = USAGE_STYLE_BY_PROTOCOL['x-images']!;
  const usage = { input_tokens: 50, input_tokens_details: { text_tokens: 40, image_tokens: 10 }, output_tokens: 4160, total_tokens: 4210 };
  const whole = Buffer.from(JSON.stringify({ created: 1, data: [{ b64_json: 'QUJD'.repeat(50_000) }], size: '1024x1024', usage }));
  const tail = whole.subarray(whole.length - 1000);
  t.equal(tail[0], 'Q'.charCodeAt(0), 'the tail starts inside the base64 string');
  t.same(extractUsageFromTail(style, tail), { input_tokens: 50, output_tokens: 4160, cached_tokens: 0, reasoning_tokens: 0, image_input_tokens: 10 });
  const none = Buffer.from(JSON.stringify({ created: 1, data: [{ b64_json: 'QUJD'.repeat(50_000) }], size: '1024x1024' }));
  t.equal(extractUsageFromTail(style, none.subarray(none.length - 1000)), undefined, 'no usage member: none');
  t.equal(extractUsageFromTail(style, Buffer.from('"usage":{"input_tokens":5}}')), undefined, 'a member at the tail\'s very start: not known to be one');
});

t.test('from a tail: a "usage" that is not a top-level member is not read', async (t) => {
  const style = USAGE_STYLE_BY_PROTOCOL['x-images']!;
  const b64 = 'QUJD'.repeat(1000);
  // A key whose text ends in an escaped quote and usage: its bytes end `\"usage"`, a value follows.
  const escapedKey = Buffer.from(JSON.stringify({ data: [{ b64_json: b64 }], usage: { input_tokens: 1, output_tokens: 2 }, 'x"usage': { input_tokens: 999, output_tokens: 999 } }));
  t.same(JSON.parse(escapedKey.toString()).usage, { input_tokens: 1, output_tokens: 2 }, 'JSON.parse reads the real member');
  t.equal(extractUsageFromTail(style, escapedKey.subarray(100)), undefined, 'the escaped key is not taken for usage');
  const nested = Buffer.from(JSON.stringify({ data: [{ b64_json: b64, usage: { input_tokens: 7, output_tokens: 7 } }] }));
  t.equal(extractUsageFromTail(style, nested.subarray(100)), undefined, 'a nested usage is not the body\'s');
});

t.test('from a tail: members after the top-level usage that hold a "usage" key or escaped keys (a responses answer\'s metadata) do not hide it', async (t) => {
  const style = USAGE_STYLE_BY_PROTOCOL['x-responses']!;
  const usage = { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1005 };
  for (const metadata of [{ usage: 'billing-team' }, { 'a"b': 'v' }, { note: 'café "q"' }, {}]) {
    // OpenAI's Responses object: `usage`, then `user` and the request's `metadata`.
    const whole = Buffer.from(JSON.stringify({ id: 'resp_1', object: 'response', output: [{ type: 'image_generation_call', result: 'QUJD'.repeat(5000) }], usage, user: null, metadata }));
    t.same(extractUsageFromTail(style, whole.subarray(whole.length - 2000)), { input_tokens: 1000, output_tokens: 5, cached_tokens: 0, reasoning_tokens: 0 }, `metadata ${JSON.stringify(metadata)}`);
  }
});

t.test('an OCR answer billed by the page (usage_info, no usage) counts no tokens; one with usage counts it', async (t) => {
  // Mistral's OCR answer: pages and usage_info.pages_processed, no token counts.
  t.equal(extractUsage('suite', { pages: [], model: 'ocr', usage_info: { pages_processed: 3, doc_size_bytes: 1024 } }), undefined);
  t.match(extractUsage('suite', { pages: [], usage: { prompt_tokens: 5, completion_tokens: 1 } }), { input_tokens: 5, output_tokens: 1 });
});
