import t, { type Test } from 'tap';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A generate alt=sse stream that ends cleanly inside an event is cut (its error event, recorded
// upstream_stream_broken), as a generate alt=sse stream typed application/json is read as an
// event stream (usage recorded, a break ended with the error event). And a completions chunk
// with an empty usage object after the real usage does not reset it.

const GENERATE_PATH = '/v1beta/models/team-m:streamGenerateContent?alt=sse';
const GENERATE_BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
const chunk = (text: string, candidates: number) =>
  `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0 }], usageMetadata: { promptTokenCount: 8, candidatesTokenCount: candidates, totalTokenCount: 8 + candidates } })}\r\n\r\n`;
const FIRST = chunk('Hel', 1);
const SECOND = chunk('lo', 4);
const GENERATE_ERROR = /^data: \{"error":\{"code":502,[^\n]*"reason":"upstream_stream_broken"[^\n]*\}\n\n$/;

/** A Group whose upstream answers 200 with `headers`, writing `pieces` in separate reads, then `end`. */
async function scenario(t: Test, o: { protocol: string; channel: string; headers: OutgoingHttpHeaders; pieces: string[]; end?: (res: ServerResponse) => void }) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.writeHead(200, o.headers);
    for (const piece of o.pieces) {
      res.write(piece);
      // Apart in time, so that the gateway reads them apart.
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    (o.end ?? ((r) => r.end()))(res);
  });
  await seedGroup(gw.store, { channel: o.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: [o.protocol] });
  return { gw, keyValue };
}

async function generate(t: Test, headers: OutgoingHttpHeaders, pieces: string[], end?: (res: ServerResponse) => void) {
  const { gw, keyValue } = await scenario(t, { protocol: 'x-generate', channel: 'ch15', headers, pieces, end });
  const res = await fetch(`${gw.url}${GENERATE_PATH}`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: JSON.stringify(GENERATE_BODY) });
  const text = await res.text();
  return { text, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
}

t.test('a generate alt=sse stream that ends cleanly inside an event: its whole events, then the error event, recorded as broken', async (t) => {
  const { text, record } = await generate(t, { 'content-type': 'text/event-stream' }, [FIRST, 'data: {"candidates":[{"cont']);
  t.equal(text.slice(0, FIRST.length), FIRST);
  t.match(text.slice(FIRST.length), GENERATE_ERROR, 'the half event dropped, the error event on its own');
  t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
});

t.test('a generate alt=sse stream whose last block is only a comment without its line end ends as sent, a success', async (t) => {
  const { text, record } = await generate(t, { 'content-type': 'text/event-stream' }, [FIRST, SECOND, ': keep-alive']);
  t.equal(text, `${FIRST}${SECOND}: keep-alive\n\n`);
  t.match(record, { status: 200, error_code: null });
});

for (const contentType of ['application/json', 'application/json; charset=utf-8']) {
  t.test(`a generate alt=sse stream typed ${contentType} is relayed as an event stream`, async (t) => {
    await t.test('its usage recorded', async (t) => {
      const { text, record } = await generate(t, { 'content-type': contentType }, [FIRST, SECOND]);
      t.equal(text, FIRST + SECOND, 'as sent');
      t.match(record, { status: 200, error_code: null });
      t.match(record.usage, { input_tokens: 8, output_tokens: 4 });
    });
    await t.test('a break inside an event ends it with the error event', async (t) => {
      const { text, record } = await generate(t, { 'content-type': contentType }, [FIRST, SECOND.slice(0, 20)], (res) => res.destroy());
      t.equal(text.slice(0, FIRST.length), FIRST);
      t.match(text.slice(FIRST.length), GENERATE_ERROR);
      t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
      t.match(record.usage, { input_tokens: 8, output_tokens: 1 }, 'the usage of the events passed on');
    });
  });
}

t.test('a completions chunk with an empty usage object after the usage chunk does not reset the usage', async (t) => {
  const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'vendor-m' };
  const pieces = [
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }] })}\n\n`,
    `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`,
    `data: ${JSON.stringify({ ...base, choices: [], usage: {} })}\n\n`,
    'data: [DONE]\n\n',
  ];
  const { gw, keyValue } = await scenario(t, { protocol: 'x-completions', channel: 'ch02', headers: { 'content-type': 'text/event-stream' }, pieces });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(await res.text(), pieces.join(''));
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record.usage, { input_tokens: 5, output_tokens: 2 });
});

// A completions or generate stream may end with any event: a whole last event without its blank
// line goes on ended, its usage counted, a success. Half of one is a cut. A whole event dropped
// by a cut (where the final event is owed) still has its usage counted: the upstream billed it.
const COMPLETIONS_REQUEST = { model: 'team-m', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] };
const COMPLETIONS_BASE = { id: 'c2', object: 'chat.completion.chunk', created: 1, model: 'vendor-m' };
const COMPLETIONS_TEXT = `data: ${JSON.stringify({ ...COMPLETIONS_BASE, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`;
const COMPLETIONS_USAGE = `data: ${JSON.stringify({ ...COMPLETIONS_BASE, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}`;

async function completions(t: Test, pieces: string[]) {
  const { gw, keyValue } = await scenario(t, { protocol: 'x-completions', channel: 'ch02', headers: { 'content-type': 'text/event-stream' }, pieces });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify(COMPLETIONS_REQUEST) });
  const text = await res.text();
  return { text, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
}

t.test('a completions stream whose last usage chunk lacks its blank line (no [DONE]): passed on ended, usage counted, a success', async (t) => {
  const { text, record } = await completions(t, [COMPLETIONS_TEXT, COMPLETIONS_USAGE]);
  t.equal(text, `${COMPLETIONS_TEXT}${COMPLETIONS_USAGE}\n\n`);
  t.match(record, { status: 200, error_code: null });
  t.match(record.usage, { input_tokens: 5, output_tokens: 2 });
});

t.test('a completions stream ending inside its last chunk: the half chunk dropped, the error event, recorded as broken', async (t) => {
  const { text, record } = await completions(t, [COMPLETIONS_TEXT, COMPLETIONS_USAGE.slice(0, -20)]);
  t.equal(text.slice(0, COMPLETIONS_TEXT.length), COMPLETIONS_TEXT);
  t.match(text.slice(COMPLETIONS_TEXT.length), /^data: \{"error":\{[^\n]*"code":"upstream_stream_broken"[^\n]*\}\n\n$/);
  t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
});

t.test('a generate alt=sse stream whose last event lacks its blank line: passed on ended, usage counted, a success', async (t) => {
  const { text, record } = await generate(t, { 'content-type': 'text/event-stream' }, [FIRST, SECOND.slice(0, -4)]);
  t.equal(text, `${FIRST}${SECOND.slice(0, -4)}\n\n`);
  t.match(record, { status: 200, error_code: null });
  t.match(record.usage, { input_tokens: 8, output_tokens: 4 });
});

t.test('a messages stream ending with a whole usage event but no message_stop: cut, the usage counted', async (t) => {
  const start = `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'm1', type: 'message', role: 'assistant', model: 'vendor-m', content: [], stop_reason: null, usage: { input_tokens: 9, output_tokens: 1 } } })}\n\n`;
  const delta = `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 6 } })}`;
  const { gw, keyValue } = await scenario(t, { protocol: 'x-messages', channel: 'ch14', headers: { 'content-type': 'text/event-stream' }, pieces: [start, delta] });
  const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
  const text = await res.text();
  t.equal(text.slice(0, start.length), start);
  t.match(text.slice(start.length), /^event: error\ndata: [^\n]*upstream_stream_broken[^\n]*\n\n$/, 'the whole event dropped, the error event on its own');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
  t.match(record.usage, { input_tokens: 9, output_tokens: 6 }, 'the dropped event\'s usage counted');
});
