import t from 'tap';
import { SseParser, type SseEvent } from '../../src/streaming/index.ts';
import { SSE_SAMPLE } from './fixtures/sse-sample.ts';

const fields = (events: SseEvent[]) => events.map(({ raw: _raw, ...rest }) => rest);

function parseAll(chunks: Array<Uint8Array | string>): SseEvent[] {
  const parser = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...parser.push(c));
  out.push(...parser.end());
  return out;
}

const STREAM = SSE_SAMPLE;

const EXPECTED = [
  { comments: ['keep-alive'] },
  { event: 'message_start', data: '{"type":"message_start","text":"héllo ✓ 🚀"}' },
  { data: 'line one\nline two' },
  { id: '7', retry: 1500, data: 'no-space' },
  { event: 'ping', data: '' },
  { data: '[DONE]' },
];

t.test('parses CRLF, CR and LF endings, multi-line data, comments, id and retry', async (t) => {
  const events = parseAll([Buffer.from(STREAM)]);
  t.same(fields(events), EXPECTED);
  t.equal(events.map((e) => e.raw).join(''), STREAM, 'raw blocks concatenate back to the input');
});

t.test('a split at any byte gives the same events', async (t) => {
  const bytes = Buffer.from(STREAM);
  for (let cut = 1; cut < bytes.length; cut++) {
    const events = parseAll([bytes.subarray(0, cut), bytes.subarray(cut)]);
    t.same(fields(events), EXPECTED, `cut at ${cut}`);
  }
});

t.test('byte by byte', async (t) => {
  const bytes = Buffer.from(STREAM);
  const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
  const events = parseAll(chunks);
  t.same(fields(events), EXPECTED);
  t.equal(events.map((e) => e.raw).join(''), STREAM);
});

t.test('events are delivered as soon as their blank line arrives', async (t) => {
  const parser = new SseParser();
  t.same(parser.push('data: a\n'), []);
  t.same(fields(parser.push('\ndata: b')), [{ data: 'a' }]);
  t.same(fields(parser.push('\n\n')), [{ data: 'b' }]);
});

t.test('a CR at the end of a chunk waits for a possible LF', async (t) => {
  const parser = new SseParser();
  t.same(parser.push('data: x\r\n\r'), []);
  t.same(fields(parser.push('\ndata: y\r\n\r\n')), [{ data: 'x' }, { data: 'y' }]);
});

t.test('end() delivers a trailing block without its blank line, and a final lone CR', async (t) => {
  t.same(fields(parseAll(['data: last'])), [{ data: 'last' }]);
  t.same(fields(parseAll(['data: cr\r'])), [{ data: 'cr' }]);
});

t.test('ignores unknown fields, bad retry, ids with NUL, extra blank lines; strips BOM', async (t) => {
  const events = parseAll([Buffer.from('\uFEFFfoo: bar\nretry: 1s\nid: a\0b\ndata: ok\n\n\n\n')]);
  t.same(fields(events), [{ data: 'ok' }]);
});

t.test('many events in one chunk', async (t) => {
  const text = Array.from({ length: 2000 }, (_, i) => `data: {"i":${i}}\n\n`).join('');
  const events = parseAll([text]);
  t.equal(events.length, 2000);
  t.equal(events[1999]?.data, '{"i":1999}');
});
