import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { STREAM_STYLES } from './helpers/stream-styles.ts';

// Streams as real vendors send them (OpenAI chat and Responses, Moonshot, vLLM, OpenRouter,
// Anthropic, Gemini alt=sse), played from a loopback upstream through the real data plane:
// the client gets the upstream's bytes exactly (less the usage-only chunk the gateway asked
// for) however the reads split them, and the record has the stream's usage once.

interface Transcript {
  style: keyof typeof STREAM_STYLES;
  events: string[];
  /** Indexes of the events the client does not get (the usage-only chunk the gateway asked for). */
  dropped?: number[];
  usage: Record<string, number>;
  errorCode?: string;
  body?: Record<string, unknown>;
}

/** How the upstream's writes split the transcript: an event per read, all in one, or 7 bytes at a time (mid-line, mid-CRLF, mid-UTF-8). */
const SPLITS: Record<string, (events: string[]) => Buffer[]> = {
  'event by event': (events) => events.map((e) => Buffer.from(e)),
  'all at once': (events) => [Buffer.from(events.join(''))],
  '7 bytes at a time': (events) => {
    const bytes = Buffer.from(events.join(''));
    const pieces: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) pieces.push(bytes.subarray(i, i + 7));
    return pieces;
  },
};

const data = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const named = (type: string, o: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
const DONE = 'data: [DONE]\n\n';

// OpenAI chat completions (gpt-4.1-nano chunks as the openai SDK's fixtures record them).
const chunkBase = { id: 'chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf', object: 'chat.completion.chunk', created: 1745678496, model: 'gpt-4.1-nano-2025-04-14', service_tier: 'default', system_fingerprint: 'fp_eede8f0d45' };
const chunk = (choices: unknown[], extra: Record<string, unknown> = { usage: null }) => data({ ...chunkBase, choices, ...extra });
const choice = (delta: Record<string, unknown>, finish: string | null = null, index = 0, logprobs: unknown = null) => ({ index, delta, logprobs, finish_reason: finish });
const OPENAI_USAGE = { prompt_tokens: 91, completion_tokens: 14, total_tokens: 105, prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
const usageChunk = chunk([], { usage: OPENAI_USAGE });
const OPENAI_UNIFIED = { input_tokens: 91, output_tokens: 14, cached_tokens: 64 };
const toolCalls = [
  chunk([choice({ role: 'assistant', content: null, refusal: null, tool_calls: [{ index: 0, id: 'call_PieqNSej6kM9hgYbcQdbZSaC', type: 'function', function: { name: 'get_weather', arguments: '' } }] })]),
  chunk([choice({ tool_calls: [{ index: 0, function: { arguments: '{"' } }] })]),
  chunk([choice({ tool_calls: [{ index: 0, function: { arguments: 'usage":"' } }] })]),
  chunk([choice({ tool_calls: [{ index: 0, function: { arguments: 'x"}' } }] })]),
  // A second call whose name and arguments say "usage": text, not a usage member.
  chunk([choice({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'usage', arguments: '{"usage":{}}' } }] })]),
  chunk([choice({}, 'tool_calls')]),
  usageChunk,
  DONE,
];
const tokenLogprobs = { content: [{ token: 'Hi', logprob: -0.01, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.01, bytes: [72, 105] }] }], refusal: null };

// OpenAI Responses (o4-mini: a reasoning summary, then a function call), ending as `end` says.
function responsesStream(end: string, response: Record<string, unknown>): string[] {
  const head = { id: 'resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654', object: 'response', created_at: 1741290958, model: 'o4-mini-2025-04-16', error: null, incomplete_details: null, output: [], reasoning: { effort: 'medium', summary: 'auto' }, metadata: {} };
  const events: Array<[string, Record<string, unknown>]> = [
    ['response.created', { response: { ...head, status: 'in_progress', usage: null } }],
    ['response.in_progress', { response: { ...head, status: 'in_progress', usage: null } }],
    ['response.output_item.added', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }],
    ['response.reasoning_summary_part.added', { item_id: 'rs_1', output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' } }],
    ['response.reasoning_summary_text.delta', { item_id: 'rs_1', output_index: 0, summary_index: 0, delta: '**Reading the "usage" question**' }],
    ['response.reasoning_summary_text.done', { item_id: 'rs_1', output_index: 0, summary_index: 0, text: '**Reading the "usage" question**' }],
    ['response.output_item.added', { output_index: 1, item: { id: 'fc_1', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'call_1', name: 'get_weather' } }],
    ['response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 1, delta: '{"location":' }],
    ['response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 1, delta: '"Paris"}' }],
    ['response.function_call_arguments.done', { item_id: 'fc_1', output_index: 1, arguments: '{"location":"Paris"}' }],
    [end, { response: { ...head, ...response } }],
  ];
  return events.map(([type, o], i) => named(type, { ...o, sequence_number: i }));
}
const RESPONSES_USAGE = { input_tokens: 75, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1035, output_tokens_details: { reasoning_tokens: 832 }, total_tokens: 1110 };
const RESPONSES_UNIFIED = { input_tokens: 75, output_tokens: 1035, reasoning_tokens: 832 };

// Anthropic: thinking with its signature, a tool_use block, ping, cache counters on both ends.
const messageStart = { message: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 472, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 0 }, output_tokens: 2, service_tier: 'standard' } } };
const anthropic = [
  named('message_start', messageStart),
  named('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  named('ping', {}),
  named('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'The user asks about "usage".' } }),
  named('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' } }),
  named('content_block_stop', { index: 0 }),
  named('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } }),
  named('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }),
  named('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"location": "San Fra' } }),
  named('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: 'ncisco, CA"}' } }),
  named('content_block_stop', { index: 1 }),
  named('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 472, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 89 } }),
  named('message_stop', {}),
];

// Gemini alt=sse: CRLF events, usageMetadata on every chunk, the last one complete.
const gemini = (o: unknown) => `data: ${JSON.stringify(o)}\r\n\r\n`;
const geminiText = gemini({ candidates: [{ content: { parts: [{ text: 'Let me check' }], role: 'model' }, index: 0 }], usageMetadata: { promptTokenCount: 30, totalTokenCount: 30, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 30 }] }, modelVersion: 'gemini-2.5-flash', responseId: 'r1' });

const TRANSCRIPTS: Record<string, Transcript> = {
  'OpenAI chat with tool_call argument deltas, not asked for usage': { style: 'completions', events: toolCalls, dropped: [6], usage: OPENAI_UNIFIED },
  'OpenAI chat with tool_call argument deltas, asked for usage': { style: 'completions', events: toolCalls, usage: OPENAI_UNIFIED, body: { ...STREAM_STYLES.completions!.body, stream_options: { include_usage: true } } },
  'OpenAI chat n=2 with logprobs': {
    style: 'completions',
    events: [
      chunk([choice({ role: 'assistant', content: '' }, null, 0, { content: [], refusal: null }), choice({ role: 'assistant', content: '' }, null, 1, { content: [], refusal: null })]),
      chunk([choice({ content: 'Hi' }, null, 0, tokenLogprobs)]),
      chunk([choice({}, 'stop', 0)]),
      chunk([choice({ content: 'Hi' }, null, 1, tokenLogprobs)]),
      chunk([choice({}, 'length', 1)]),
      usageChunk,
      DONE,
    ],
    dropped: [5],
    usage: OPENAI_UNIFIED,
  },
  'OpenAI chat refusal deltas, CRLF line ends': {
    style: 'completions',
    events: [chunk([choice({ role: 'assistant', content: null, refusal: '' })]), chunk([choice({ refusal: "I'm sorry, I can't help with that." })]), chunk([choice({}, 'stop')]), usageChunk, DONE].map((e) => e.replace(/\n/g, '\r\n')),
    dropped: [3],
    usage: OPENAI_UNIFIED,
  },
  'OpenRouter: processing comments, event lines, no [DONE]': {
    style: 'completions',
    events: [': OPENROUTER PROCESSING\n\n', `event: message\n${chunk([choice({ role: 'assistant', content: 'Hi' })])}`, ': OPENROUTER PROCESSING\n\n', `event: message\n${chunk([choice({}, 'stop')])}`, `event: message\n${usageChunk}`],
    dropped: [4],
    usage: OPENAI_UNIFIED,
  },
  "Moonshot: usage in the finish chunk's choices[0]": {
    style: 'completions',
    events: [
      data({ id: 'cmpl-1305b94c570f447fbde3180560736287', object: 'chat.completion.chunk', created: 1698999575, model: 'moonshot-v1-8k', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }),
      data({ id: 'cmpl-1305b94c570f447fbde3180560736287', object: 'chat.completion.chunk', created: 1698999575, model: 'moonshot-v1-8k', choices: [{ index: 0, delta: { content: '你好' }, finish_reason: null }] }),
      data({ id: 'cmpl-1305b94c570f447fbde3180560736287', object: 'chat.completion.chunk', created: 1698999575, model: 'moonshot-v1-8k', choices: [{ index: 0, delta: {}, finish_reason: 'stop', usage: { prompt_tokens: 19, completion_tokens: 13, total_tokens: 32, cached_tokens: 5 } }] }),
      DONE,
    ],
    usage: { input_tokens: 19, output_tokens: 13, cached_tokens: 5 },
  },
  'vLLM continuous_usage_stats: usage on every chunk, then the usage-only chunk': {
    style: 'completions',
    events: [
      data({ id: 'chatcmpl-v', object: 'chat.completion.chunk', created: 1, model: 'meta-llama/Llama-3.1-8B-Instruct', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], usage: { prompt_tokens: 20, total_tokens: 20, completion_tokens: 0 } }),
      data({ id: 'chatcmpl-v', object: 'chat.completion.chunk', created: 1, model: 'meta-llama/Llama-3.1-8B-Instruct', choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: 'stop', stop_reason: null }], usage: { prompt_tokens: 20, total_tokens: 22, completion_tokens: 2 } }),
      data({ id: 'chatcmpl-v', object: 'chat.completion.chunk', created: 1, model: 'meta-llama/Llama-3.1-8B-Instruct', choices: [], usage: { prompt_tokens: 20, total_tokens: 22, completion_tokens: 2 } }),
      DONE,
    ],
    dropped: [2],
    usage: { input_tokens: 20, output_tokens: 2 },
  },
  'Responses: reasoning summary and function call arguments, response.completed': { style: 'responses', events: responsesStream('response.completed', { status: 'completed', usage: RESPONSES_USAGE }), usage: RESPONSES_UNIFIED },
  'Responses: response.incomplete': { style: 'responses', events: responsesStream('response.incomplete', { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: RESPONSES_USAGE }), usage: RESPONSES_UNIFIED },
  'Responses: response.failed': { style: 'responses', events: responsesStream('response.failed', { status: 'failed', error: { code: 'server_error', message: 'The model failed to generate a response.' }, usage: RESPONSES_USAGE }), usage: RESPONSES_UNIFIED, errorCode: 'upstream_stream_error' },
  'Anthropic: thinking with signature_delta, tool_use input_json_delta, cache counters': { style: 'messages', events: anthropic, usage: { input_tokens: 2572, output_tokens: 89, cached_tokens: 2000 } },
  'Anthropic: overloaded_error mid-stream': { style: 'messages', events: [...anthropic.slice(0, 4), named('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })], usage: { input_tokens: 2572, output_tokens: 2, cached_tokens: 2000 }, errorCode: 'upstream_stream_error' },
  'Gemini: a functionCall part after thinking': {
    style: 'generate alt=sse',
    events: [
      geminiText,
      gemini({ candidates: [{ content: { parts: [{ functionCall: { name: 'get_weather', args: { location: 'Boston' } }, thoughtSignature: 'CiQB0e2Kb' }], role: 'model' }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 12, totalTokenCount: 90, thoughtsTokenCount: 48, cachedContentTokenCount: 8 }, modelVersion: 'gemini-2.5-flash', responseId: 'r1' }),
    ],
    usage: { input_tokens: 30, output_tokens: 60, cached_tokens: 8, reasoning_tokens: 48 },
  },
  'Gemini: a prompt blocked by promptFeedback': {
    style: 'generate alt=sse',
    events: [gemini({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }, modelVersion: 'gemini-2.5-flash', responseId: 'r2' })],
    usage: { input_tokens: 12, output_tokens: 0 },
  },
};

for (const [name, transcript] of Object.entries(TRANSCRIPTS)) {
  t.test(name, async (t) => {
    const style = STREAM_STYLES[transcript.style]!;
    const splits = Object.entries(SPLITS);
    let answered = 0;
    const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
      const [, split] = splits[answered++]!;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const piece of split(transcript.events)) {
        res.write(piece);
        // Apart in time, so that the gateway reads them apart.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      res.end();
    });
    await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
    const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
    const expected = transcript.events.filter((_, i) => !(transcript.dropped ?? []).includes(i)).join('');
    for (const [split] of splits) {
      const res = await fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...style.headers(keyValue), 'content-type': 'application/json' }, body: JSON.stringify(transcript.body ?? style.body) });
      t.equal(await res.text(), expected, `${split}: the upstream's bytes${transcript.dropped ? ' less the usage-only chunk' : ''}`);
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 200, error_code: transcript.errorCode ?? null }, `${split}: the record's outcome`);
      t.match(record.usage, transcript.usage, `${split}: the stream's usage, once`);
    }
  });
}
