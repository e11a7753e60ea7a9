import t from 'tap';
import { SseEventSplitter, SseParser, sseEventData, type SseEvent } from '../../src/streaming/index.ts';
import { SSE_SAMPLE } from './fixtures/sse-sample.ts';

const STREAM = SSE_SAMPLE;

const fields = (events: SseEvent[]) => events.map(({ raw: _raw, ...rest }) => rest);

function parse(bytes: Buffer | string): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(bytes), ...parser.end()];
}

/** Events as split, with the LF of a CRLF split between chunks joined back to the event it ends. */
function split(chunks: Buffer[]): { events: Buffer[]; rest: Buffer | undefined } {
  const splitter = new SseEventSplitter();
  const events: Buffer[] = [];
  for (const chunk of chunks) {
    for (const piece of splitter.push(chunk)) {
      if (piece.length === 1 && piece[0] === 10 && events.length > 0 && events.at(-1)!.at(-1) === 13) events.push(Buffer.concat([events.pop()!, piece]));
      else events.push(piece);
    }
  }
  return { events, rest: splitter.end() };
}

t.test('whole stream: one buffer per event, exactly the bytes received', async (t) => {
  const { events, rest } = split([Buffer.from(STREAM)]);
  t.equal(rest, undefined, 'nothing left over');
  t.equal(events.length, 6);
  t.equal(Buffer.concat(events).toString(), STREAM);
  t.same(
    events.map((e) => fields(parse(e))),
    fields(parse(STREAM)).map((e) => [e]),
    'each buffer holds exactly one of the events a full parser sees',
  );
});

t.test('a split at any byte keeps every event whole and every byte in order', async (t) => {
  const bytes = Buffer.from(STREAM);
  const expected = fields(parse(STREAM));
  for (let cut = 1; cut < bytes.length; cut++) {
    const { events, rest } = split([bytes.subarray(0, cut), bytes.subarray(cut)]);
    const all = Buffer.concat([...events, ...(rest ? [rest] : [])]);
    if (!all.equals(bytes)) t.fail(`bytes changed at cut ${cut}`);
    const perEvent = events.map((e) => fields(parse(e)));
    if (JSON.stringify(perEvent.flat()) !== JSON.stringify(expected) || perEvent.some((p) => p.length !== 1)) t.fail(`events differ at cut ${cut}`);
  }
  t.pass('every cut checked');
});

t.test('byte-at-a-time delivery and random chunkings', async (t) => {
  const bytes = Buffer.from(STREAM.repeat(5));
  const bytewise = split([...bytes].map((b) => Buffer.from([b])));
  t.equal(bytewise.events.length, 30);
  t.ok(Buffer.concat(bytewise.events).equals(bytes));
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let round = 0; round < 200; round++) {
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; ) {
      const size = 1 + Math.floor(random() * 40);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    const { events, rest } = split(chunks);
    if (events.length !== 30 || rest !== undefined || !Buffer.concat(events).equals(bytes)) t.fail(`round ${round}`);
  }
  t.pass('200 random chunkings');
});

t.test('an unfinished last event is handed back by end(), not as an event', async (t) => {
  const splitter = new SseEventSplitter();
  t.same(splitter.push(Buffer.from('data: a\n\ndata: b')).map(String), ['data: a\n\n']);
  t.same(splitter.push(Buffer.from('c\n')), []);
  t.equal(splitter.end()?.toString(), 'data: bc\n');
  t.equal(splitter.end(), undefined);
});

t.test('takePending hands over an unfinished event; its rest comes as the next event', async (t) => {
  const splitter = new SseEventSplitter();
  t.same(splitter.push(Buffer.from('data: first\n\ndata: lo')), [Buffer.from('data: first\n\n')]);
  t.same(splitter.push(Buffer.from('ng-')), []);
  t.equal(splitter.pendingBytes, 'data: long-'.length, 'what it holds of the unfinished event');
  t.equal(splitter.takePending().toString(), 'data: long-');
  t.equal(splitter.pendingBytes, 0, 'and holds nothing after');
  t.same(splitter.push(Buffer.from('event\r')), []);
  t.same(
    splitter.push(Buffer.from('\n\r\ndata: next\n\n')).map(String),
    ['event\r\n\r\n', 'data: next\n\n'],
    'the rest of the event (its line end split across chunks), then the next event',
  );
});

t.test('sseEventData reads the data of one event as the full parser does', async (t) => {
  const { events } = split([Buffer.from(STREAM)]);
  for (const event of events) t.equal(sseEventData(event.toString()), parse(event)[0]?.data, JSON.stringify(event.toString()));
  t.equal(sseEventData('\ndata: a\ndatum: no\ndata:b\ndata\n\n'), 'a\nb\n', 'a stray line end first, look-alike fields skipped, an empty data line kept');
  for (const text of ['data: {"a":1}\n\n', 'data: a\rdata: b\n\n', 'data:x\n\n', 'data: a\ndata: b\n\n', 'data: \n\n', 'data: a\r\n\r\n', 'event: e\ndata: a\n\n']) {
    t.equal(sseEventData(text), parse(text)[0]?.data, `as the full parser: ${JSON.stringify(text)}`);
  }
  // The first event keeps the BOM its stream opens with; the parser's decoder drops it from bytes.
  for (const text of ['\uFEFFdata: a\n\n', '\uFEFFevent: e\r\ndata: a\r\n\r\n']) {
    t.equal(sseEventData(text), parse(Buffer.from(text))[0]?.data, `a stream's BOM, as the full parser: ${JSON.stringify(text)}`);
  }
});

t.test('pushBlock: complete events of an LF-only chunk come back as one block, the rest is kept; any other chunk is left to push', async (t) => {
  const splitter = new SseEventSplitter();
  t.equal(splitter.pushBlock(Buffer.from('data: a\n\ndata: b\n\n'))?.toString(), 'data: a\n\ndata: b\n\n', 'a chunk of whole events is its own block');
  t.equal(splitter.pushBlock(Buffer.from('data: c\n\ndata: d\n'))?.toString(), 'data: c\n\n', 'the unfinished event is kept');
  t.equal(splitter.pushBlock(Buffer.from('\n')), undefined, 'nothing is taken while an event is pending');
  t.same(splitter.push(Buffer.from('\n')).map(String), ['data: d\n\n'], 'push finishes the kept event');
  t.equal(splitter.pushBlock(Buffer.from('data: e\r\n\r\n')), undefined, 'CR line ends go through push');
  t.equal(splitter.pushBlock(Buffer.from('data: f')), undefined, 'no event end: left to push');
  t.equal(splitter.end(), undefined, 'a chunk left to push is not kept');
});

t.test('pushBlock then push under random chunkings: the same bytes, events whole, none twice', async (t) => {
  const lfOnly = 'data: {"a":1}\n\nevent: x\ndata: two\ndata: lines\n\n: comment\n\ndata: [DONE]\n\n';
  for (const stream of [lfOnly.repeat(4), STREAM.repeat(3)]) {
    const bytes = Buffer.from(stream);
    const expected = fields(parse(stream));
    let seed = 11;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 300; round++) {
      const splitter = new SseEventSplitter();
      const out: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const chunk = bytes.subarray(at, at + 1 + Math.floor(random() * 60));
        at += chunk.length;
        const block = splitter.pushBlock(chunk);
        if (block === undefined) out.push(...splitter.push(chunk));
        else out.push(block);
      }
      const rest = splitter.end();
      if (rest !== undefined) out.push(rest);
      const all = Buffer.concat(out);
      if (!all.equals(bytes)) t.fail(`bytes changed in round ${round}`);
      // Each piece holds whole events only: parsed piece by piece they give the stream's events.
      if (JSON.stringify(out.flatMap((piece) => fields(parse(piece)))) !== JSON.stringify(expected)) t.fail(`events differ in round ${round}`);
    }
  }
  t.pass('300 chunkings of an LF-only stream and of one with every line ending');
});

t.test('the LF of a CRLF split between chunks ends the event before it, so it goes with that event and not the next', async (t) => {
  const splitter = new SseEventSplitter();
  t.same(splitter.push(Buffer.from('data: a\r\n\r')).map(String), ['data: a\r\n\r']);
  t.same(splitter.push(Buffer.from('\ndata: b\r\n\r\n')).map(String), ['\n', 'data: b\r\n\r\n'], 'the LF alone, then the next event without it');
  t.same(splitter.push(Buffer.from('data: c\r')).map(String), [], 'a CR inside an event');
  t.same(splitter.push(Buffer.from('\n\r\n')).map(String), ['data: c\r\n\r\n'], 'its LF stays in the event it belongs to');
});
