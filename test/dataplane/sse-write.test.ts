import t from 'tap';
import {
  SseParser,
  SSE_DONE,
  jsonArrayStreamErrorTail,
  serializeSse,
  streamErrorEvent,
  type StreamFailure,
} from '../../src/streaming/index.ts';
import { streamFailureOf } from '../../src/dataplane/relay/stream-failure-of.ts';

function parseOne(text: string) {
  const parser = new SseParser();
  const events = [...parser.push(text), ...parser.end()];
  if (events.length !== 1) throw new Error(`expected one event, got ${events.length}`);
  return events[0]!;
}

t.test('serializeSse round-trips through the parser', async (t) => {
  const text = serializeSse({ event: 'update', id: '42', retry: 3000, data: 'a\nb\r\nc', comment: 'hi' });
  t.equal(text, ': hi\nevent: update\nid: 42\nretry: 3000\ndata: a\ndata: b\ndata: c\n\n');
  const event = parseOne(text);
  t.equal(event.data, 'a\nb\nc');
  t.equal(event.event, 'update');
  t.equal(event.id, '42');
  t.equal(event.retry, 3000);
  t.same(event.comments, ['hi']);
});

t.test('object data is JSON, single-line fields cannot inject lines', async (t) => {
  t.equal(serializeSse({ data: { a: 1 } }), 'data: {"a":1}\n\n');
  const event = parseOne(serializeSse({ event: 'x\ndata: injected', data: 'real' }));
  t.equal(event.data, 'real');
  t.equal(SSE_DONE, 'data: [DONE]\n\n');
});

// Named by the status each is answered with before a stream's first byte: 504 and 502.
const timeout: StreamFailure = { ...streamFailureOf('upstream_idle_timeout'), message: 'upstream sent nothing for 30 s' };
const broken: StreamFailure = { ...streamFailureOf('upstream_stream_broken'), message: 'upstream connection closed mid-stream' };

t.test('completions error event', async (t) => {
  const event = parseOne(streamErrorEvent('completions', timeout));
  t.equal(event.event, undefined);
  t.same(JSON.parse(event.data!), {
    error: { message: 'upstream sent nothing for 30 s', type: 'server_error', code: 'upstream_idle_timeout', param: null },
  });
});

t.test('responses error event', async (t) => {
  const event = parseOne(streamErrorEvent('responses', broken, { sequenceNumber: 12 }));
  t.equal(event.event, 'error');
  t.same(JSON.parse(event.data!), {
    type: 'error', code: 'upstream_stream_broken', message: 'upstream connection closed mid-stream', param: null, sequence_number: 12,
  });
});

t.test('messages error event', async (t) => {
  const event = parseOne(streamErrorEvent('messages', timeout));
  t.equal(event.event, 'error');
  const body = JSON.parse(event.data!);
  t.equal(body.type, 'error');
  t.equal(body.error.type, 'timeout_error');
  t.equal(body.error.message, timeout.message);
  t.equal(body.error.code, 'upstream_idle_timeout');
  t.equal(JSON.parse(parseOne(streamErrorEvent('messages', broken)).data!).error.type, 'api_error');
});

t.test('generate error event', async (t) => {
  const body = JSON.parse(parseOne(streamErrorEvent('generate', timeout)).data!);
  t.equal(body.error.code, 504);
  t.equal(body.error.status, 'DEADLINE_EXCEEDED');
  t.equal(body.error.message, timeout.message);
  t.equal(body.error.details[0].reason, 'upstream_idle_timeout');
  t.match(JSON.parse(parseOne(streamErrorEvent('generate', broken)).data!).error, { code: 502, status: 'UNAVAILABLE' });
});

t.test('generate JSON-array tail closes the array', async (t) => {
  const sent = '[{"candidates":[]}';
  const whole = JSON.parse(sent + jsonArrayStreamErrorTail(broken, 1));
  t.equal(whole.length, 2);
  t.equal(whole[1].error.status, 'UNAVAILABLE');
  t.equal(JSON.parse('[' + jsonArrayStreamErrorTail(timeout, 0)).length, 1);
});
