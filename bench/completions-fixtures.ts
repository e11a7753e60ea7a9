/** Requests and responses of the completions style used by the benchmark. */

export const MODEL = 'bench-model';

export const nonStreamingRequest = JSON.stringify({
  model: MODEL,
  messages: [
    { role: 'system', content: 'You are a terse assistant.' },
    { role: 'user', content: 'Say hello to the benchmark.' },
  ],
  max_tokens: 64,
});

export const streamingRequest = JSON.stringify({ ...JSON.parse(nonStreamingRequest), stream: true });

const usage = {
  prompt_tokens: 24,
  completion_tokens: 6,
  total_tokens: 30,
  prompt_tokens_details: { cached_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0 },
};

export const completionBody = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello, benchmark!' }, finish_reason: 'stop' }],
    usage,
  }),
);

const chunk = (delta: object, finish: string | null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

/** The events of a streamed completion; the usage chunk is sent only when the request asks. */
export const streamEvents: readonly string[] = [
  chunk({ role: 'assistant', content: '' }, null),
  chunk({ content: 'Hello' }, null),
  chunk({ content: ', bench' }, null),
  chunk({ content: 'mark!' }, null),
  chunk({}, 'stop'),
];

export const usageEvent = `data: ${JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: MODEL,
  choices: [],
  usage,
})}\n\n`;

export const doneEvent = 'data: [DONE]\n\n';
