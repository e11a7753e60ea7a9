import t, { type Test } from 'tap';
import { completionsSse, startChatRoute } from './helpers/chat-route.ts';
import { chatBody } from './helpers/dataplane-scenarios.ts';

// An upstream that refuses the `stream_options` the gateway added on the client's behalf (Groq
// answered 400 "property 'stream_options' is unsupported", Cohere's compatibility API and
// pydantic-validated servers refuse unknown fields with 400/422) is sent the client's own body
// again: the client never asked for it, and its streamed chat would otherwise always fail.

const SECRET = 'sk-upstream-refuses-options-9d1f';
const MODEL = 'strict-chat';
const base = { id: 'cmpl-3', object: 'chat.completion.chunk', created: 1, model: MODEL };
const CHUNKS = [
  { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }] },
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } },
];

/** Groq's answer to a body naming stream_options (vercel/ai#1578). */
const GROQ_REFUSAL = { status: 400, body: { error: { message: "property 'stream_options' is unsupported, did you mean 'stream'?", type: 'invalid_request_error' } } };
/** A pydantic server forbidding extra fields (the shape Mistral answers with). */
const EXTRA_FORBIDDEN = { status: 422, body: { detail: [{ type: 'extra_forbidden', loc: ['body', 'stream_options'], msg: 'Extra inputs are not permitted', input: { include_usage: true } }] } };

type Refusal = typeof GROQ_REFUSAL | typeof EXTRA_FORBIDDEN;

/** An upstream that answers `refusal` to any body with stream_options, and a stream to any other. */
function strictRoute(t: Test, refusal: Refusal, refuses: (body: Record<string, unknown>) => boolean = (body) => 'stream_options' in body) {
  return startChatRoute(t, {
    channel: 'ch02',
    model: MODEL,
    secret: SECRET,
    respond: (req, res) => {
      if (refuses(JSON.parse(req.body.toString('utf8')))) {
        res.writeHead(refusal.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(refusal.body));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(completionsSse(CHUNKS));
    },
  });
}

for (const [name, refusal] of [
  ['400 naming stream_options', GROQ_REFUSAL],
  ['422 extra_forbidden', EXTRA_FORBIDDEN],
] as const) {
  t.test(`${name}: the client's own body goes again, and its stream reaches the client whole`, async (t) => {
    const { upstream, post } = await strictRoute(t, refusal);
    const body = chatBody(MODEL, true);
    const { status, text, record } = await post(body);
    t.equal(status, 200);
    t.equal(upstream.requests.length, 2, 'asked once with stream_options, then without');
    t.same(JSON.parse(upstream.requests[0]!.body.toString('utf8')).stream_options, { include_usage: true });
    t.equal(upstream.requests[1]!.body.toString('utf8'), body, "the client's body byte for byte");
    t.equal(text, completionsSse(CHUNKS), 'every chunk, none hidden');
    t.match(record.usage, { input_tokens: 9, output_tokens: 2 }, 'usage from the chunk that carries it');
    t.same(
      record.attempts.map((a) => [a.status, a.error_code]),
      [
        [refusal.status, `upstream_${refusal.status}`],
        [200, null],
      ],
      'both attempts logged',
    );
  });
}

t.test('the refusal is remembered: later streams go to that credential without stream_options at once; the resend counts against no attempt limit', async (t) => {
  const { upstream, gw, post } = await strictRoute(t, GROQ_REFUSAL);
  await gw.store.settings.save({ max_attempts_per_request: 1 });
  const first = await post(chatBody(MODEL, true));
  t.equal(first.status, 200, 'served after the resend, with one attempt allowed');
  t.equal(upstream.requests.length, 2);
  for (let i = 0; i < 2; i++) {
    const later = await post(chatBody(MODEL, true));
    t.equal(later.status, 200);
    t.same(later.record.attempts.map((a) => a.status), [200], `request ${i + 2}: one attempt`);
  }
  t.equal(upstream.requests.length, 4, 'one upstream request each after the first');
  t.notOk(upstream.requests.slice(2).some((r) => 'stream_options' in JSON.parse(r.body.toString('utf8'))), 'none of them with stream_options');
});

t.test('a spooled body (over 1 MiB) goes again without stream_options too', async (t) => {
  const { upstream, post } = await strictRoute(t, GROQ_REFUSAL);
  const body = chatBody(MODEL, true, { messages: [{ role: 'user', content: 'x'.repeat(1_200_000) }] });
  const { status, text } = await post(body);
  t.equal(status, 200);
  t.equal(upstream.requests.length, 2);
  t.equal(upstream.requests[1]!.body.toString('utf8'), body, "the client's body byte for byte");
  t.equal(text, completionsSse(CHUNKS));
});

t.test("a client's own stream_options refused: the refusal is the client's answer, nothing sent again", async (t) => {
  const { upstream, post } = await strictRoute(t, GROQ_REFUSAL);
  const { status, text } = await post(chatBody(MODEL, true, { stream_options: { include_usage: true } }));
  t.equal(status, 400);
  t.same(JSON.parse(text), GROQ_REFUSAL.body);
  t.equal(upstream.requests.length, 1);
});

t.test('a 400 about something else is passed on, nothing sent again', async (t) => {
  const other = { status: 400, body: { error: { message: "'messages' must contain the word 'json'", type: 'invalid_request_error' } } };
  const { upstream, post } = await strictRoute(t, other, () => true);
  const { status, text } = await post(chatBody(MODEL, true));
  t.equal(status, 400);
  t.same(JSON.parse(text), other.body);
  t.equal(upstream.requests.length, 1);
});

t.test('an upstream that refuses the body again is answered with its second refusal, not asked a third time', async (t) => {
  const { upstream, post } = await strictRoute(t, GROQ_REFUSAL, () => true);
  const { status, text } = await post(chatBody(MODEL, true));
  t.equal(status, 400);
  t.same(JSON.parse(text), GROQ_REFUSAL.body);
  t.equal(upstream.requests.length, 2);
});
