import t from 'tap';
import { opensFinalEvent } from '../../src/dataplane/relay/final-stream-event.ts';

// The first piece of an SSE event too large to hold (src/dataplane/relay/relay-sse.ts): whether
// it opens the event a style ends a finished stream with, read from its start alone (the
// event's data is cut off, so the event is no whole SSE to parse).

const CUT_DATA = `{"type":"response.completed","sequence_number":9,"response":{"output":[{"type":"image_generation_call","result":"${'A'.repeat(8192)}`;

t.test('the event field before the data names the event', async (t) => {
  t.equal(opensFinalEvent('responses', Buffer.from(`event: response.completed\ndata: {"response":{"output":[{"result":"AAAA`)), true);
  t.equal(opensFinalEvent('responses', Buffer.from(`event:response.failed\r\ndata: {"type":"x`)), true, 'without its space, after CRLF');
  t.equal(opensFinalEvent('messages', Buffer.from(`: ping\nid: 7\nevent: message_stop\ndata: {"type":"message_stop","padding":"AAAA`)), true, 'after a comment and an id');
  t.equal(opensFinalEvent('responses', Buffer.from(`event: response.output_item.done\ndata: {"type":"response.completed"`)), false, 'the event field wins over the data\'s type, as the parser has it');
  t.equal(opensFinalEvent('messages', Buffer.from(`event: message_delta\ndata: {"type":"message_delta"`)), false);
});

t.test('without an event field, the data\'s leading type names it', async (t) => {
  t.equal(opensFinalEvent('responses', Buffer.from(`data: ${CUT_DATA}`)), true);
  t.equal(opensFinalEvent('responses', Buffer.from(`data:{ "type" : "response.incomplete", "response": {"output": "AAAA`)), true, 'spaced as any JSON may be');
  t.equal(opensFinalEvent('responses', Buffer.from(`data: {"sequence_number":9,"type":"response.completed","response":{`)), false, 'only a leading type is read');
  t.equal(opensFinalEvent('responses', Buffer.from(`data: {"type":"response.output_item.done","item":{"type":"response.completed"`)), false);
});

t.test('only the start is read, and an event field only once a data line follows it', async (t) => {
  t.equal(opensFinalEvent('responses', Buffer.from(`: ${'x'.repeat(5000)}\nevent: response.completed\ndata: {`)), false, 'fields past what is read');
  // The line `event: response.completed.more`, cut by the read after `response.completed`.
  const cut = `: ${'x'.repeat(4096 - 3 - 'event: response.completed'.length)}\nevent: response.completed.more\ndata: {`;
  t.equal(opensFinalEvent('responses', Buffer.from(cut)), false, 'an event line the read cuts off');
  t.equal(opensFinalEvent('messages', Buffer.from('event: message_stop')), false, 'no data line after it');
});

t.test('styles whose final event is known by its whole data, or that have none, never open one in a large event', async (t) => {
  t.equal(opensFinalEvent('completions', Buffer.from(`data: ${CUT_DATA}`)), false);
  t.equal(opensFinalEvent('generate', Buffer.from(`data: {"candidates":[{"finishReason":"STOP","content":{"parts":[{"inlineData":{"data":"AAAA`)), false);
});
