import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenAIAPIError } from 'openai';
import { chatChunks, jsonBody, logOf, messageEvents, responseEvents, rig, sseText, type SseFrame } from './helpers/vendor-wire.ts';

// An upstream that ends its stream cleanly (res.end()) with a last block sent without its
// blank line. Unless that block is the protocol's final event, the stream was cut: the block is
// dropped and the gateway's error event follows the last whole event on its own, which each
// SDK raises as the gateway's error (not a SyntaxError, not a silent, truncated success).

const MESSAGES = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };
const RESPONSES = { channel: 'ch09', protocols: ['x-responses'], external: 'team-resp', upstreamModel: 'vendor-resp-1' };
const COMPLETIONS = { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' };
const ASK = { max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };

/** Each frame in a write of its own, then `tail` (a block without its blank line), then a clean end. */
async function writeSseThenEnd(res: ServerResponse, frames: readonly SseFrame[], tail: string): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  for (const frame of frames) await write(res, sseText([frame]));
  if (tail !== '') await write(res, tail);
  res.end();
}

function write(res: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve, reject) => res.write(text, (err) => (err ? reject(err) : resolve())));
}

/** The client's bytes past `sent`, which must come first and unchanged. */
async function bytesAfter(t: Test, res: Response, sent: string): Promise<string> {
  const text = await res.text();
  t.equal(text.slice(0, sent.length), sent, 'the whole events as sent');
  return text.slice(sent.length);
}

/** The one standalone event `rest` must be: its fields and the JSON of its data. */
function soleEvent(t: Test, rest: string): { event: string | undefined; data: any } {
  t.match(rest, /^(event: [a-z_.]+\n)?data: [^\n]+\n\n$/, 'one standalone event, its own lines, ended by its blank line');
  const event = /^event: (.*)\n/.exec(rest)?.[1];
  return { event, data: JSON.parse(/^data: (.*)$/m.exec(rest)![1]!) };
}

const messageFrames = (model: string) => messageEvents(model, ['Bro', 'ken', ' off']).slice(0, 5);
const MESSAGE_TAILS = {
  'a comment without its line end': ': ping',
  'half a data line': 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_d',
  'a whole event without its blank line': `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } })}\n`,
};

for (const [what, tail] of Object.entries(MESSAGE_TAILS)) {
  t.test(`messages stream ending cleanly after ${what}: a standalone error event, an APIError`, async (t) => {
    const r = await rig(t, MESSAGES, (req, res) => writeSseThenEnd(res, messageFrames(String(jsonBody(req)['model'])), tail));
    const res = await fetch(`${r.gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': r.keyValue, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-msg', ...ASK, stream: true }) });
    const { event, data } = soleEvent(t, await bytesAfter(t, res, sseText(messageFrames('vendor-msg-1'))));
    t.equal(event, 'error');
    t.match(data, { type: 'error', error: { type: 'api_error', code: 'upstream_stream_broken' } });
    t.match(await logOf(r.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: 'upstream_stream_broken' });

    const client = new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 });
    const stream = await client.messages.create({ model: 'team-msg', ...ASK, stream: true });
    const texts: string[] = [];
    const err = await (async () => {
      for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') texts.push(e.delta.text);
    })().catch((e: unknown) => e);
    t.same(texts, ['Bro', 'ken']);
    t.type(err, AnthropicAPIError, 'the typed error, not a SyntaxError nor a silent end');
    t.equal((err as AnthropicAPIError).errorCode, 'upstream_stream_broken');
  });
}

const responseFrames = (model: string) => responseEvents(model, ['Half', ' way', ' lost']).slice(0, 6);
const RESPONSE_TAILS = {
  'a comment without its line end': ': ping',
  'half a data line': 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":6,"del',
  'a whole event without its blank line': `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', item_id: 'msg_up_1', output_index: 0, content_index: 0, delta: ' lost', logprobs: [], sequence_number: 6 })}`,
};

for (const [what, tail] of Object.entries(RESPONSE_TAILS)) {
  t.test(`responses stream ending cleanly after ${what}: a standalone error event, the SDK's error event`, async (t) => {
    const r = await rig(t, RESPONSES, (req, res) => writeSseThenEnd(res, responseFrames(String(jsonBody(req)['model'])), tail));
    const res = await fetch(`${r.gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${r.keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-resp', input: 'x', stream: true }) });
    const { event, data } = soleEvent(t, await bytesAfter(t, res, sseText(responseFrames('vendor-resp-1'))));
    t.equal(event, 'error');
    t.match(data, { type: 'error', code: 'upstream_stream_broken', sequence_number: 6 });
    t.match(await logOf(r.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: 'upstream_stream_broken' });

    const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 });
    const events: { type: string }[] = [];
    const thrown = await (async () => {
      for await (const e of await client.responses.create({ model: 'team-resp', input: 'x', stream: true })) events.push(e);
    })().catch((e: unknown) => e);
    t.equal(thrown, undefined, 'the raw stream parses (no SyntaxError)');
    t.match(events.at(-1), { type: 'error', code: 'upstream_stream_broken' }, 'and ends with the error event');
    const rejected = await client.responses.stream({ model: 'team-resp', input: 'x' }).finalResponse().then(() => undefined, (e: unknown) => e);
    t.match(rejected, { type: 'error', code: 'upstream_stream_broken' }, 'finalResponse() rejects with it');
  });
}

t.test('completions stream ending cleanly inside an event: the error event, an APIError, recorded as broken', async (t) => {
  const frames = (model: string) => chatChunks(model, ['a', 'bbb'], false).slice(0, 2);
  const tail = 'data: {"id":"chatcmpl-up-2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"bbb';
  const r = await rig(t, COMPLETIONS, (req, res) => writeSseThenEnd(res, frames(String(jsonBody(req)['model'])), tail));
  const res = await fetch(`${r.gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${r.keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
  const { event, data } = soleEvent(t, await bytesAfter(t, res, sseText(frames('vendor-chat-1'))));
  t.equal(event, undefined);
  t.match(data, { error: { type: 'server_error', code: 'upstream_stream_broken' } });
  t.match(await logOf(r.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: 'upstream_stream_broken' });

  const client = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 });
  let text = '';
  const err = await (async () => {
    for await (const c of await client.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }], stream: true })) text += c.choices[0]?.delta?.content ?? '';
  })().catch((e: unknown) => e);
  t.equal(text, 'a');
  t.type(err, OpenAIAPIError, 'not a silent, truncated success');
  t.equal((err as OpenAIAPIError).code, 'upstream_stream_broken');
});

t.test('a final event that lacks only its blank line completes the stream: passed on, ended, no error', async (t) => {
  const cases = [
    { what: 'messages message_stop', route: MESSAGES, frames: messageEvents('vendor-msg-1', ['Fi', 'ne']), path: '/v1/messages', body: { model: 'team-msg', ...ASK, stream: true } },
    { what: 'responses response.completed', route: RESPONSES, frames: responseEvents('vendor-resp-1', ['Fi', 'ne']), path: '/v1/responses', body: { model: 'team-resp', input: 'x', stream: true } },
    { what: 'completions [DONE]', route: COMPLETIONS, frames: chatChunks('vendor-chat-1', ['Fi', 'ne'], true), path: '/v1/chat/completions', body: { model: 'team-chat', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'x' }] } },
  ];
  for (const c of cases) {
    for (const ending of ['', '\n']) {
      await t.test(`${c.what}${ending === '' ? ' without any line end' : ' with one line end'}`, async (t) => {
        const whole = sseText(c.frames);
        // The final event's blank line (or all of its line ends) left off.
        const sent = whole.slice(0, whole.length - 2) + ending;
        const r = await rig(t, c.route, (_req, res) => writeSseThenEnd(res, c.frames.slice(0, -1), sent.slice(sseText(c.frames.slice(0, -1)).length)));
        const headers: Record<string, string> = c.route === MESSAGES ? { 'x-api-key': r.keyValue, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${r.keyValue}` };
        const res = await fetch(`${r.gw.url}${c.path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(c.body) });
        t.equal(await res.text(), whole, 'the stream as sent, its final event ended by its blank line');
        t.match(await logOf(r.gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
      });
    }
  }
  const r = await rig(t, MESSAGES, (req, res) => {
    const frames = messageEvents(String(jsonBody(req)['model']), ['Fi', 'ne']);
    return writeSseThenEnd(res, frames.slice(0, -1), 'event: message_stop\ndata: {"type":"message_stop"}');
  });
  const final = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.stream({ model: 'team-msg', ...ASK }).finalMessage();
  t.same(final.content, [{ type: 'text', text: 'Fine' }], 'the SDK takes the stream for whole');
});
