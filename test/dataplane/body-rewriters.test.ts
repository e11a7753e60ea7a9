import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import {
  BodyRewriteError,
  JsonMemberScanner,
  MAX_SCANNED_MEMBERS,
  SMALL_FIELD_BYTES,
  SpooledFormBody,
  locateMembers,
  type FormModel,
  type ScannedObject,
  type Splice,
} from '../../src/dataplane/body/index.ts';
import { COLLECTED_FIELDS_COUNT, MultipartModelScanner } from '../../src/dataplane/body/multipart-model-scanner.ts';

const LIMIT = 64 * 1024;

function source(chunks: Array<Buffer | string>): Readable {
  return Readable.from(chunks, { objectMode: false });
}

// Every way of cutting the body in two, plus one byte at a time.
function splits(body: Buffer): Array<{ label: string; chunks: Buffer[] }> {
  const out: Array<{ label: string; chunks: Buffer[] }> = [{ label: 'byte by byte', chunks: [...body].map((b) => Buffer.of(b)) }];
  for (let cut = 0; cut <= body.length; cut++) {
    out.push({ label: `cut at ${cut}`, chunks: [body.subarray(0, cut), body.subarray(cut)].filter((c) => c.length > 0) });
  }
  return out;
}

async function collect(body: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

async function rejectsWith(t: Test, promise: Promise<unknown>, code: string, label?: string) {
  await t.rejects(promise, { name: 'BodyRewriteError', code }, label ?? code);
}

/** An empty spool directory of the test's own, removed at its end. */
function spoolDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-rewriters-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function emptied(dir: string): Promise<string[]> {
  for (let i = 0; i < 200 && readdirSync(dir).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return readdirSync(dir);
}

/**
 * A source that produces `head`, then `tailChunks` of `tail`, then `end`, but starts the tail
 * only when `gate` opens, and counts what it produced.
 */
function gatedSource(head: Buffer, tail: (i: number) => Buffer, tailChunks: number, end: Buffer, gate: Promise<void>) {
  const state = { tailStarted: false, produced: 0 };
  let next = 0;
  const readable = new Readable({
    read() {
      if (next === 0) {
        next++;
        state.produced += head.length;
        this.push(head);
        return;
      }
      void gate.then(() => {
        state.tailStarted = true;
        const chunk = next <= tailChunks ? tail(next - 1) : next === tailChunks + 1 ? end : null;
        next++;
        if (chunk !== null) state.produced += chunk.length;
        this.push(chunk);
      });
    },
  });
  return { readable, state };
}

function opener() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  // Opens by itself so that an implementation that waits for the whole body fails, not hangs.
  const timer = setTimeout(() => open(), 2000);
  return { gate, open: () => (clearTimeout(timer), open()) };
}

// ---------------------------------------------------------------------------------------------
// JSON

const MODEL_TOKEN = '"gpt-\\u00fc\\"x\\\\ \u00e9"'; // gpt-ü"x\ é, escapes and raw UTF-8
const JSON_BEFORE =
  '{ "messages" : [ {"role":"user","content":"say \\"model\\": \\"no\\" \\\\","model":"nested"} ],\r\n' +
  '\t"meta": {"model": {"model": "deeper"}}, "n": -1.5e+3, "x": [true, false, null, 0, {}], "models": "no",\n "model" :';
const JSON_AFTER = ' , "stream": true, "tail": "\\ud83d\\ude00 \u{1F600}" }\n';
const WANTED = new Map([['model', 1000], ['n', 1000], ['stream', 1000], ['x', 1000]]);

function scan(chunks: Array<Buffer | string>, wanted: ReadonlyMap<string, number> = WANTED): ScannedObject {
  const scanner = new JsonMemberScanner(wanted);
  for (const chunk of chunks) scanner.push(Buffer.from(chunk));
  return scanner.end();
}

function scanFails(t: Test, body: Buffer, code: string, label: string) {
  t.throws(() => scan([body]), { name: 'BodyRewriteError', code }, label);
}

t.test('JSON: top-level members at every split point; nested keys and escapes ignored', async (t) => {
  const text = JSON_BEFORE + MODEL_TOKEN + JSON_AFTER;
  const body = Buffer.from(text);
  const at = (needle: string, from = 0) => body.indexOf(needle, from);
  const expected = [
    { key: 'n', start: at('-1.5e+3'), end: at('-1.5e+3') + 7, raw: '-1.5e+3' },
    { key: 'x', start: at('[true'), end: at(', "models"'), raw: '[true, false, null, 0, {}]' },
    { key: 'model', start: at(MODEL_TOKEN), end: at(MODEL_TOKEN) + Buffer.byteLength(MODEL_TOKEN), raw: MODEL_TOKEN },
    { key: 'stream', start: at('true, "tail"'), end: at('true, "tail"') + 4, raw: 'true' },
  ];
  for (const { label, chunks } of splits(body)) {
    const found = scan(chunks);
    const got = found.members.map((m) => ({ key: m.key, start: m.start, end: m.end, raw: m.raw?.toString() }));
    if (JSON.stringify(got) !== JSON.stringify(expected) || found.close !== body.lastIndexOf('}')) t.fail(`${label}: ${JSON.stringify(got)} ${found.close}`);
  }
  t.equal(JSON.parse(expected[2]!.raw), 'gpt-ü"x\\ é');
  const located = locateMembers(body).members.filter((m) => WANTED.has(m.key));
  t.same(located, expected.map(({ key, start, end }) => ({ key, start, end })), 'locateMembers finds the same spans in a whole body');
  t.equal(locateMembers(body).close, body.lastIndexOf('}'));
});

t.test('JSON: a key spelt with escapes is that key; similar keys are not', async (t) => {
  const body = '{"Model":"a","model ":"b","mod\\u0065l":"c"}';
  t.same(scan([body]).members.map((m) => [m.key, m.raw?.toString()]), [['model', '"c"']]);
  t.same(locateMembers(Buffer.from(body)).members.map((m) => m.key), ['Model', 'model ', 'model']);
});

t.test('JSON: duplicates are all reported, in order; only the last keeps its value', async (t) => {
  const found = scan(['{"model":"a","x":1,"model":42}']);
  t.same(found.members.map((m) => [m.key, m.start, m.raw?.toString()]), [['model', 9, undefined], ['x', 17, '1'], ['model', 27, '42']]);
});

t.test('JSON: many large duplicates hold one value per key, the last', async (t) => {
  const value = (key: string, i: number) => `"${key}-${i}-${'v'.repeat(60_000)}"`;
  const members = Array.from({ length: 40 }, (_, i) => `"input":${value('input', i)},"query":[${value('query', i)}],"documents":{"d":${value('documents', i)}}`);
  const body = Buffer.from(`{${members.join(',')},"model":"m"}`);
  const wanted = new Map([['input', LIMIT], ['query', LIMIT], ['documents', LIMIT], ['model', 100]]);
  const found = scan(Array.from({ length: Math.ceil(body.length / 7919) }, (_, i) => body.subarray(i * 7919, (i + 1) * 7919)), wanted);
  t.equal(found.members.length, 121, 'every duplicate keeps its span');
  const kept = found.members.filter((m) => m.raw !== undefined);
  t.same(kept.map((m) => m.key), ['input', 'query', 'documents', 'model'], 'one value per key');
  t.same(kept.map((m) => body.subarray(m.start, m.end).equals(m.raw!)), [true, true, true, true]);
  t.same(kept.slice(0, 3).map((m) => m.raw!.toString().includes(`-39-`)), [true, true, true], 'and it is the last');
  t.ok(kept.reduce((sum, m) => sum + m.raw!.length, 0) < 3 * 60_100, 'what is held is about one value per key');
});

t.test('JSON: past maxMembers wanted members (duplicates and list elements counted) the body is refused', async (t) => {
  const wanted = new Map([['input', 100], ['requests[].model', 100]]);
  const scanWith = (text: string) => {
    const scanner = new JsonMemberScanner(wanted, 3);
    scanner.push(Buffer.from(text));
    return scanner.end();
  };
  t.equal(scanWith('{"input":1,"other":2,"input":3,"input":4}').members.length, 3, 'exactly maxMembers, other keys not counted');
  t.throws(() => scanWith('{"input":1,"input":2,"input":3,"input":4}'), { name: 'BodyRewriteError', code: 'too_many_members', message: /more than 3 .*\("input" at byte 39\)/ });
  t.throws(() => scanWith('{"input":1,"requests":[{"model":"a"},{"model":"b"},{"model":"c"}]}'), { code: 'too_many_members' }, 'list elements count too');
  const many = `{${Array.from({ length: MAX_SCANNED_MEMBERS + 1 }, () => '"input":0').join(',')}}`;
  t.throws(() => scan([many], wanted), { code: 'too_many_members' }, 'the default bound');
});

t.test('JSON: list[].name reports that member of each object in a top-level array, and nothing else', async (t) => {
  const text =
    '{"model":"top","requests":[{"model":"models/a","content":{"model":"deep"}},"x",[{"model":"arr"}],{"task":1,"model" :  "b"},{}],' +
    '"other":[{"model":"no"}],"requests":{"x":{"model":"obj"}},"requests":[{"model":"c"}]}';
  const body = Buffer.from(text);
  const wanted = new Map([['model', 100], ['requests[].model', 100]]);
  const expected = JSON.stringify(['model:"top"', 'requests[].model:"models/a"', 'requests[].model:"b"', 'requests[].model:"c"']);
  const wrong = splits(body).filter(({ chunks }) => JSON.stringify(scan(chunks, wanted).members.map((m) => `${m.key}:${m.raw?.toString()}`)) !== expected);
  t.same(wrong.map((w) => w.label), [], 'at every split point');
  const spans = scan([body], wanted).members.map((m) => body.toString('utf8', m.start, m.end));
  t.same(spans, ['"top"', '"models/a"', '"b"', '"c"']);
});

t.test('JSON: a value over its limit keeps its span and first byte, not its bytes', async (t) => {
  const big = 'A'.repeat(5000);
  const text = `{"input":"${big}","documents":[1,2],"model":"m"}`;
  for (const size of [7, 4096, text.length]) {
    const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));
    const [input, documents, model] = scan(chunks, new Map([['input', 100], ['documents', 5], ['model', 100]])).members;
    t.match(input, { key: 'input', start: 9, end: 9 + big.length + 2, first: 0x22, raw: undefined }, `chunks of ${size}`);
    t.match(documents, { key: 'documents', first: 0x5b, raw: Buffer.from('[1,2]') });
    t.equal(model?.raw?.toString(), '"m"');
  }
});

t.test('JSON: malformed input is invalid_json, wherever it is', async (t) => {
  const bodies = [
    '',
    '  ',
    '{"a":01,"model":"x"}',
    '{"a":1.,"model":"x"}',
    '{"a":-,"model":"x"}',
    '{"a":1e,"model":"x"}',
    '{"a":tru,"model":"x"}',
    '{"a" 1,"model":"x"}',
    '{"a":1,,"model":"x"}',
    '{"a":1,}',
    '{"a":[1}',
    '{a:1,"model":"x"}',
    '{"a":"\\x","model":"x"}',
    '{"a":"\\u12G4","model":"x"}',
    '{"a":"line\nbreak","model":"x"}',
    '{"a":"unterminated',
    '{"a":1',
    '{"model":"x","a":1',
    '{"a":1} {"model":"x"}',
    '{"model":"x"} x',
    '\ufeff{"model":"x"}',
    '{"a":' + '['.repeat(200),
  ];
  for (const body of bodies) {
    for (const { label, chunks } of splits(Buffer.from(body))) {
      try {
        scan(chunks);
        t.fail(`${JSON.stringify(body)} ${label}: accepted`);
      } catch (error) {
        if ((error as BodyRewriteError).code !== 'invalid_json') t.fail(`${JSON.stringify(body)} ${label}: ${String(error)}`);
      }
    }
  }
  t.pass('all splits');
});

t.test('JSON: UTF-8 is checked at every split point; anything else is invalid_json', async (t) => {
  const good = Buffer.from('{"a":"é€😀","b":"x"}');
  for (const { label, chunks } of splits(good)) {
    try {
      scan(chunks);
    } catch (err) {
      t.fail(`${label}: ${String(err)}`);
    }
  }
  const bad: Array<[string, number[]]> = [
    ['overlong m', [0xc1, 0xad]],
    ['overlong 3-byte', [0xe0, 0x81, 0xad]],
    ['surrogate', [0xed, 0xa0, 0x80]],
    ['past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['stray continuation', [0x80]],
    ['lead without continuation', [0xe2, 0x82, 0x41]],
  ];
  for (const [label, bytes] of bad) {
    const body = Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bytes), Buffer.from('","model":"m"}')]);
    for (const split of splits(body)) {
      try {
        scan(split.chunks);
        t.fail(`${label}, ${split.label}: accepted`);
      } catch (err) {
        // The offset is the bad sequence's, wherever the chunks were cut.
        const { code, message } = err as BodyRewriteError;
        if (code !== 'invalid_json' || message !== 'not UTF-8 at byte 6') t.fail(`${label}, ${split.label}: ${String(err)}`);
      }
    }
  }
  t.throws(() => scan([Buffer.from('{"a":"é'), Buffer.from('xyz'), Buffer.of(0xff)]), { message: 'not UTF-8 at byte 11' }, 'counted from the body start');
  t.throws(() => scan([Buffer.from('{"a":1}'), Buffer.of(0xe2, 0x82)]), { code: 'invalid_json' }, 'a body that ends inside a sequence');
});

t.test('JSON: a body that is not one object is not_an_object', async (t) => {
  for (const body of ['[{"model":"x"}]', '"model"', ' 42 ', 'null']) scanFails(t, Buffer.from(body), 'not_an_object', body);
});

// ---------------------------------------------------------------------------------------------
// multipart/form-data

const BOUNDARY = '----switchyardBoundary7MA4YWxk';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

interface Part {
  header?: string; // a full Content-Disposition line when the default does not do
  name?: string;
  filename?: string;
  value: string | Buffer;
}

function disposition(part: Part): string {
  if (part.header !== undefined) return part.header;
  const file = part.filename === undefined ? '' : `; filename="${part.filename}"\r\nContent-Type: application/octet-stream`;
  return `Content-Disposition: form-data; name="${part.name}"${file}`;
}

function multipart(parts: Part[], { preamble = '', epilogue = '' } = {}): Buffer {
  const pieces: Buffer[] = [Buffer.from(preamble)];
  for (const [i, part] of parts.entries()) {
    pieces.push(Buffer.from(`${i === 0 && preamble === '' ? '' : '\r\n'}--${BOUNDARY}\r\n${disposition(part)}\r\n\r\n`));
    pieces.push(Buffer.from(part.value));
  }
  pieces.push(Buffer.from(`\r\n--${BOUNDARY}--${epilogue}`));
  return Buffer.concat(pieces);
}

// Binary that holds near-misses of the delimiter, which must not end the part (the boundary
// itself, after any line break or none, is refused: see the malformed bodies).
const TRICKY_FILE = Buffer.concat([
  Buffer.from([0, 0xff, 0x0d, 0x0a, 0x2d, 0x2d]),
  Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}\r\n\r\n--\r`),
  Buffer.from(`-${BOUNDARY}\r\n\r`),
]);

/** The splice an attempt makes: the form's model value replaced by `upstream`; none without a model. */
function modelSplice(found: FormModel, upstream: string): Splice[] {
  const span = found.model;
  return span === undefined ? [] : [{ start: span.start, end: span.end, bytes: Buffer.from(upstream) }];
}

/** Where the value of the form's (only) `name="model"` field without a filename starts. */
function modelValueAt(body: Buffer, header = 'name="model"\r\n\r\n'): number {
  return body.indexOf(header) + header.length;
}

t.test('multipart: model field at every split point; fields before it are reported', async (t) => {
  const dir = spoolDir(t);
  const partsWith = (model: string): Part[] => [
    { name: 'prompt', value: 'a cat\r\n--not a boundary' },
    { header: 'content-disposition:form-data;name=stream', value: 'true' },
    { header: 'Content-Disposition: form-data; name="n"\r\nContent-Type: text/plain; charset=utf-8', value: '2' },
    { name: 'model', value: model },
    { name: 'image', filename: 'cat.png', value: TRICKY_FILE },
    { name: 'response_format', value: 'b64_json' },
  ];
  const body = multipart(partsWith('gpt-image-1 ü'), { preamble: 'ignored preamble\r\n' });
  const expected = multipart(partsWith('upstream-image'), { preamble: 'ignored preamble\r\n' });
  const start = modelValueAt(body);
  const span = { value: 'gpt-image-1 ü', start, end: start + Buffer.byteLength('gpt-image-1 ü') };
  for (const { label, chunks } of splits(body)) {
    const form = new SpooledFormBody(source(chunks), CONTENT_TYPE, dir);
    const found = await form.ready;
    if (JSON.stringify(found.model) !== JSON.stringify(span)) t.fail(`${label}: model ${JSON.stringify(found.model)}`);
    const fields = Object.fromEntries(found.fields);
    if (JSON.stringify(fields) !== JSON.stringify({ prompt: 'a cat\r\n--not a boundary', stream: 'true', n: '2' })) {
      t.fail(`${label}: fields ${JSON.stringify(fields)}`);
    }
    const out = await collect(form.read(modelSplice(found, 'upstream-image')));
    if (!out.equals(expected)) t.fail(`${label}: ${JSON.stringify(out.toString('latin1'))}`);
    form.release();
  }
  t.pass('all splits');
  t.same(await emptied(dir), [], 'release() removed every spool file');
});

t.test('multipart: model after the file part', async (t) => {
  const dir = spoolDir(t);
  const file = Buffer.alloc(20_000, 7);
  const parts = (model: string): Part[] => [
    { name: 'file', filename: 'speech.mp3', value: file },
    { name: 'model', value: model },
    { name: 'response_format', value: 'verbose_json' },
  ];
  const body = multipart(parts('whisper-1'));
  const chunks = Array.from({ length: Math.ceil(body.length / 1000) }, (_, i) => body.subarray(i * 1000, (i + 1) * 1000));
  const form = new SpooledFormBody(source(chunks), CONTENT_TYPE, dir);
  const found = await form.ready;
  t.same(found.model, { value: 'whisper-1', start: modelValueAt(body), end: modelValueAt(body) + 'whisper-1'.length });
  t.same(Object.fromEntries(found.fields), { response_format: 'verbose_json' }, 'fields after the model are read up to the form\'s end; files never are');
  const out = await collect(form.read(modelSplice(found, 'whisper-large-v3')));
  t.ok(out.equals(multipart(parts('whisper-large-v3'))));
  form.release();
});

/** How many bytes the scanner had been given when its outcome settled, and the scanner once all of `chunks` are in. */
function settledAfter(chunks: Buffer[]): { at: number | undefined; scanner: MultipartModelScanner } {
  const scanner = new MultipartModelScanner(BOUNDARY);
  let pushed = 0;
  let at: number | undefined;
  for (const chunk of chunks) {
    scanner.push(chunk);
    pushed += chunk.length;
    if (at === undefined && scanner.outcome !== undefined) at = pushed;
  }
  scanner.end();
  return { at, scanner };
}

/** The first chunk end at or past `point`: where a scanner given `chunks` can settle at the earliest. */
function firstChunkEndFrom(chunks: Buffer[], point: number): number | undefined {
  let pushed = 0;
  for (const chunk of chunks) {
    pushed += chunk.length;
    if (pushed >= point) return pushed;
  }
  return undefined;
}

t.test('multipart: the outcome settles at the first file part after the model, at every split point; the small fields up to it are read', async (t) => {
  const body = multipart([
    { name: 'stream', value: 'false' },
    { name: 'prompt', value: 'p'.repeat(SMALL_FIELD_BYTES + 1) },
    { name: 'model', value: 'gpt-image-1' },
    { name: 'n', value: '2' },
    { name: 'stream', value: 'true' },
    { name: 'response_format', value: 'url' },
    { name: 'image', filename: 'cat.png', value: TRICKY_FILE },
    { name: 'response_format', value: 'b64_json' },
  ]);
  const fileHeaders = 'filename="cat.png"\r\nContent-Type: application/octet-stream\r\n\r\n';
  const point = body.indexOf(fileHeaders) + fileHeaders.length;
  // Later duplicates win; a field too large to keep is not kept; none after the file is read.
  const expected = JSON.stringify({ stream: 'true', n: '2', response_format: 'url' });
  for (const { label, chunks } of splits(body)) {
    const { at, scanner } = settledAfter(chunks);
    if (at !== firstChunkEndFrom(chunks, point)) t.fail(`${label}: settled after ${at} bytes, the file's headers end at ${point}`);
    if (scanner.outcome?.model?.value !== 'gpt-image-1') t.fail(`${label}: model ${JSON.stringify(scanner.outcome?.model)}`);
    if (JSON.stringify(Object.fromEntries(scanner.fields)) !== expected) t.fail(`${label}: fields ${JSON.stringify(Object.fromEntries(scanner.fields))}`);
  }
  t.pass('all splits');
});

t.test('multipart: with no file part after the model, the outcome settles at the close delimiter, at every split point', async (t) => {
  const body = multipart(
    [
      { name: 'file', filename: 'speech.mp3', value: TRICKY_FILE },
      { name: 'model', value: 'whisper-1' },
      { name: 'stream', value: 'true' },
      { name: 'response_format', value: 'verbose_json' },
    ],
    { epilogue: '\r\n' },
  );
  const point = body.length - 2;
  for (const { label, chunks } of splits(body)) {
    const { at, scanner } = settledAfter(chunks);
    if (at !== firstChunkEndFrom(chunks, point)) t.fail(`${label}: settled after ${at} bytes, the close ends at ${point}`);
    if (scanner.outcome?.model?.value !== 'whisper-1') t.fail(`${label}: model ${JSON.stringify(scanner.outcome?.model)}`);
    if (JSON.stringify(Object.fromEntries(scanner.fields)) !== JSON.stringify({ stream: 'true', response_format: 'verbose_json' })) t.fail(`${label}: fields ${JSON.stringify(Object.fromEntries(scanner.fields))}`);
  }
  t.pass('all splits');
  // A form without a model settles at its close as well, with no model and its fields.
  const modelless = settledAfter([multipart([{ name: 'file', filename: 'v.wav', value: 'RIFF' }, { name: 'name', value: 'my voice' }])]);
  t.equal(modelless.scanner.outcome?.model, undefined);
  t.same(Object.fromEntries(modelless.scanner.fields), { name: 'my voice' });
});

t.test('multipart: a text part after the model settles the outcome at its start once it grows past the small-field limit, at every split point', async (t) => {
  const large = 'p'.repeat(SMALL_FIELD_BYTES + 1);
  const cases = [
    // A file sent without a filename (`curl -F file=<a.wav`), then fields that are not read.
    { label: 'a field', before: [] as Part[], name: 'file', fields: { n: '2' } },
    // Past COLLECTED_FIELDS_COUNT a field is skipped from its start: its size still counts.
    { label: 'a skipped field', before: Array.from({ length: COLLECTED_FIELDS_COUNT }, (_, i) => ({ name: `f${i}`, value: 'x' })), name: 'file', fields: undefined },
  ];
  for (const { label: what, before, name, fields } of cases) {
    const body = multipart([...before, { name: 'model', value: 'whisper-1' }, { name: 'n', value: '2' }, { name, value: large }, { name: 'stream', value: 'true' }]);
    const header = `name="${name}"\r\n\r\n`;
    const start = body.indexOf(header) + header.length;
    const point = start + SMALL_FIELD_BYTES + 1;
    const wrong: string[] = [];
    for (const { label, chunks } of what === 'a field' ? splits(body) : splits(body).filter((_, i) => i % 97 === 0)) {
      const { at, scanner } = settledAfter(chunks);
      if (at !== firstChunkEndFrom(chunks, point)) wrong.push(`${label}: settled after ${at} bytes, the part passes the limit at ${point}`);
      if (scanner.outcome?.at !== start || scanner.outcome.model?.value !== 'whisper-1') wrong.push(`${label}: outcome ${JSON.stringify(scanner.outcome)}`);
      if (fields !== undefined && JSON.stringify(Object.fromEntries(scanner.fields)) !== JSON.stringify(fields)) wrong.push(`${label}: fields ${JSON.stringify(Object.fromEntries(scanner.fields))}`);
    }
    t.same(wrong, [], `${what}: at every split point`);
  }
  // One within the limit is a field like any other: the outcome waits for the close.
  const small = multipart([{ name: 'model', value: 'whisper-1' }, { name: 'file', value: 'p'.repeat(SMALL_FIELD_BYTES) }, { name: 'stream', value: 'true' }]);
  const { at, scanner } = settledAfter([...small].map((b) => Buffer.of(b)));
  t.equal(at, small.length, 'settled at the close');
  t.same(Object.fromEntries(scanner.fields), { file: 'p'.repeat(SMALL_FIELD_BYTES), stream: 'true' });
});

/**
 * Produces `body` in `chunkBytes` pieces only as it is pulled (then `error`, if given), and
 * records how many bytes it had produced beyond those already in the spool file.
 */
function meteredSource(body: Buffer, chunkBytes: number, dir: string, error?: Error) {
  const state = { produced: 0, maxHeld: 0, spooled: new Set<string>() };
  const readable = new Readable({
    read() {
      const spooled = readdirSync(dir);
      for (const name of spooled) state.spooled.add(name);
      const written = spooled.reduce((sum, name) => sum + (statSync(path.join(dir, name), { throwIfNoEntry: false })?.size ?? 0), 0);
      state.maxHeld = Math.max(state.maxHeld, state.produced - written);
      if (state.produced >= body.length) {
        if (error) this.destroy(error);
        else this.push(null);
        return;
      }
      const chunk = body.subarray(state.produced, state.produced + chunkBytes);
      state.produced += chunk.length;
      this.push(chunk);
    },
  });
  return { readable, state };
}

t.test('multipart: a model field after a large file is found with the form spooled, with backpressure; each read is the whole form', async (t) => {
  const dir = spoolDir(t);
  const file = Buffer.concat([Buffer.from(Array.from({ length: 1024 * 1024 }, (_, i) => (i * 7919) % 251)), TRICKY_FILE]);
  const parts = (model: string): Part[] => [
    { name: 'file', filename: 'speech.mp3', value: file },
    { name: 'model', value: model },
    { name: 'language', value: 'en' },
    { name: 'audio', filename: 'second.mp3', value: file.subarray(0, 100_000) },
  ];
  const body = multipart(parts('whisper-1'));
  const { readable, state } = meteredSource(body, 8 * 1024, dir);
  const form = new SpooledFormBody(readable, CONTENT_TYPE, dir);
  const found = await form.ready;
  t.equal(found.model?.value, 'whisper-1');
  t.ok(state.produced < body.length, 'resolved before the source ended');
  const first = await collect(form.read(modelSplice(found, 'whisper-large-v3')));
  t.ok(first.equals(multipart(parts('whisper-large-v3'))), 'byte for byte but the model');
  const second = await collect(form.read(modelSplice(found, 'whisper-2')));
  t.ok(second.equals(multipart(parts('whisper-2'))), 'read again from the file, with another model');
  t.equal(state.spooled.size, 1, 'the form went to one file');
  // The file stream's queue (16 KiB) and the source's buffer (16 KiB), a chunk each way.
  t.ok(state.maxHeld <= 64 * 1024, `held at most ${state.maxHeld} bytes not yet in the file`);
  t.equal(readdirSync(dir).length, 1, 'the file stays while the request lasts');
  form.release();
  t.same(await emptied(dir), [], 'release() removes it');

  const noModel = multipart([{ name: 'file', filename: 'a.mp3', value: file }, { name: 'stream', value: 'true' }]);
  const metered = meteredSource(noModel, 8 * 1024, dir);
  const without = new SpooledFormBody(metered.readable, CONTENT_TYPE, dir);
  t.equal((await without.ready).model, undefined);
  t.equal(metered.state.produced, noModel.length, 'a form without a model is read to its end');
  t.ok((await collect(without.read([]))).equals(noModel), 'and comes back as sent');
  without.release();
  t.same(await emptied(dir), [], 'its spool file gone too');

  const unread = meteredSource(body, 8 * 1024, dir);
  const dropped = new SpooledFormBody(unread.readable, CONTENT_TYPE, dir);
  await dropped.ready;
  t.equal(readdirSync(dir).length, 1, 'a form never read keeps its file');
  dropped.release();
  t.same(await emptied(dir), [], 'until release(), while it still arrives');
  t.ok(unread.state.produced < body.length, 'and the rest of the source is not read');
  await t.rejects(collect(dropped.read([])), 'nor can the form be read any more');
});

t.test('multipart: a source that fails leaves no file, before the model is known or during a read', async (t) => {
  const dir = spoolDir(t);
  const closing = `\r\n--${BOUNDARY}--`.length;
  const head = multipart([{ name: 'file', filename: 'speech.mp3', value: Buffer.alloc(200_000, 3) }]).subarray(0, -closing);
  const { readable, state } = meteredSource(head, 8 * 1024, dir, new Error('connection reset'));
  await t.rejects(new SpooledFormBody(readable, CONTENT_TYPE, dir).ready, { message: 'connection reset' });
  t.equal(state.spooled.size, 1, 'the form was being spooled');
  t.same(await emptied(dir), [], 'the spool file removed');

  const withModel = multipart([{ name: 'model', value: 'whisper-1' }, { name: 'file', filename: 'speech.mp3', value: Buffer.alloc(200_000, 3) }]).subarray(0, -closing);
  const late = new SpooledFormBody(meteredSource(withModel, 8 * 1024, dir, new Error('connection reset')).readable, CONTENT_TYPE, dir);
  const found = await late.ready;
  t.equal(found.model?.value, 'whisper-1');
  await t.rejects(collect(late.read(modelSplice(found, 'whisper-large-v3'))), { message: 'connection reset' }, 'a read under way fails with the source error');
  t.same(await emptied(dir), [], 'and the file is removed');
  late.release();
});

t.test('multipart: a similar name is not the model field', async (t) => {
  const dir = spoolDir(t);
  const body = multipart([
    { header: 'Content-Disposition: form-data; name="mo\\"del"', value: 'quoted' },
    { header: 'Content-Disposition: form-data; name="Model"', value: 'cased' },
    { name: 'model', value: 'tts-1' },
  ]);
  const form = new SpooledFormBody(source([body]), CONTENT_TYPE, dir);
  const found = await form.ready;
  t.equal(found.model?.value, 'tts-1');
  t.equal(found.model?.start, body.lastIndexOf('tts-1'));
  t.same(Object.fromEntries(found.fields), { 'mo"del': 'quoted', Model: 'cased' });
  form.release();
});

t.test('multipart: without a model field the original bytes come back', async (t) => {
  const dir = spoolDir(t);
  const body = multipart(
    [
      { name: 'stream', value: 'false' },
      { name: 'big', value: 'x'.repeat(SMALL_FIELD_BYTES + 1) },
      { name: 'empty', value: '' },
      { name: 'file', filename: 'a.png', value: TRICKY_FILE },
    ],
    { epilogue: '\r\n \t\r\n' },
  );
  for (const { label, chunks } of splits(body)) {
    const form = new SpooledFormBody(source(chunks), CONTENT_TYPE, dir);
    const found = await form.ready;
    const out = await collect(form.read(modelSplice(found, 'ignored')));
    if (found.model !== undefined || !out.equals(body)) t.fail(label);
    if (JSON.stringify(Object.fromEntries(found.fields)) !== '{"stream":"false","empty":""}') t.fail(`${label}: fields`);
    form.release();
  }
  t.pass('all splits');
});

t.test('multipart: quoted boundary, transport padding, empty model value', async (t) => {
  const dir = spoolDir(t);
  const boundary = 'a b:c';
  const body = `--${boundary} \t\r\nContent-Disposition: form-data; name=model\r\n\r\n\r\n--${boundary}--`;
  const form = new SpooledFormBody(source([body]), `Multipart/Form-Data; charset=utf-8; boundary="${boundary}"`, dir);
  const found = await form.ready;
  t.same(found.model, { value: '', start: body.indexOf('\r\n\r\n\r\n') + 4, end: body.indexOf('\r\n\r\n\r\n') + 4 });
  const out = await collect(form.read(modelSplice(found, 'dall-e-2')));
  t.equal(out.toString(), body.replace('\r\n\r\n\r\n', '\r\n\r\ndall-e-2\r\n'));
  form.release();
});

t.test('multipart: malformed bodies and headers are invalid_multipart', async (t) => {
  const dir = spoolDir(t);
  for (const contentType of [undefined, 'application/json', 'multipart/form-data', `multipart/mixed; boundary=${BOUNDARY}`, `multipart/form-data; boundary=${'b'.repeat(71)}`, `multipart/form-data; boundary=x; boundary=y`]) {
    t.throws(() => new SpooledFormBody(source(['']), contentType as string, dir), { name: 'BodyRewriteError', code: 'invalid_multipart' }, String(contentType));
  }
  t.same(readdirSync(dir), [], 'a form refused by its header is not spooled');
  const model = multipart([{ name: 'model', value: 'm' }]);
  const bodies: Array<[string, Buffer | string]> = [
    ['truncated in the model value', model.subarray(0, model.indexOf('\r\n\r\nm') + 5)],
    ['no boundary at all', 'just text'],
    ['part without disposition', `--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['part without headers', `--${BOUNDARY}\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['header without colon', `--${BOUNDARY}\r\nContent-Disposition form-data; name=model\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['two names', `--${BOUNDARY}\r\nContent-Disposition: form-data; name=model; name=x\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['two dispositions', `--${BOUNDARY}\r\nContent-Disposition: form-data; name=x\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['junk after delimiter', `--${BOUNDARY}X\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--${BOUNDARY}--`],
    ['headers too large', `--${BOUNDARY}\r\nX-Pad: ${'p'.repeat(20_000)}\r\n`],
    ['duplicate model', multipart([{ name: 'model', value: 'a' }, { name: 'model', value: 'b' }])],
    ['model not UTF-8', Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\n`), Buffer.of(0xff), Buffer.from(`\r\n--${BOUNDARY}--`)])],
    ...['filename=""', "filename*=UTF-8''m.bin", 'filename ="m.bin"', 'FileName="m.bin"', 'filename*0="m.bin"'].map((file): [string, Buffer] => [
      `model sent as a file (${file})`,
      multipart([{ header: `Content-Disposition: form-data; name="model"; ${file}`, value: 'b' }]),
    ]),
    ['model sent as a file after the model', multipart([{ name: 'model', value: 'a' }, { name: 'model', filename: 'm.bin', value: 'b' }])],
    ['name*', multipart([{ header: "Content-Disposition: form-data; name*=UTF-8''model", value: 'b' }])],
    ['name* beside name', multipart([{ name: 'model', value: 'a' }, { header: "Content-Disposition: form-data; name=x; name*=UTF-8''model", value: 'b' }])],
    ['name*0', multipart([{ header: 'Content-Disposition: form-data; name=x; name*0="mo"; name*1="del"', value: 'b' }])],
    ['padding before the close', `--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\na\r\n--${BOUNDARY} --`],
    ['tab before the close', `--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\na\r\n--${BOUNDARY}\t--\r\n`],
    ['parts after the close', multipart([{ name: 'model', value: 'a' }], { epilogue: `\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nb\r\n--${BOUNDARY}--\r\n` })],
    ['text after the close', multipart([{ name: 'model', value: 'a' }], { epilogue: '\r\nepilogue' })],
    ['boundary after a bare LF', multipart([{ name: 'file', filename: 'f', value: `x\n--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nb` }, { name: 'model', value: 'a' }])],
    ['boundary after a bare CR', multipart([{ name: 'file', filename: 'f', value: `x\r--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nb` }, { name: 'model', value: 'a' }])],
    ['boundary at the start of a value', multipart([{ name: 'file', filename: 'f', value: `--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nb` }, { name: 'model', value: 'a' }])],
    ['boundary in the preamble', multipart([{ name: 'model', value: 'a' }], { preamble: `\n--${BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nb\r\n` })],
    ['bare LF in part headers', multipart([{ header: 'Content-Disposition: form-data; name="x"\nContent-Type: text/plain', value: 'b' }, { name: 'model', value: 'a' }])],
    ['folded part header', multipart([{ header: 'Content-Disposition: form-data; name="x"\r\n  ; filename="f"', value: 'b' }])],
    ['space before a header colon', multipart([{ header: 'Content-Disposition : form-data; name="model"', value: 'b' }])],
    ['a parameter name that is not a token', multipart([{ header: 'Content-Disposition: form-data; name="x"; n\u00e9me="model"', value: 'b' }])],
    ['a control character in a part header', multipart([{ header: 'Content-Disposition: form-data; name="x"\r\nX-Pad: a\vb', value: 'b' }])],
    ['part headers not UTF-8', Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="x`), Buffer.of(0xc1, 0xad), Buffer.from(`"\r\n\r\nb\r\n--${BOUNDARY}--`)])],
  ];
  for (const [label, body] of bodies) {
    await rejectsWith(t, new SpooledFormBody(source([body]), CONTENT_TYPE, dir).ready, 'invalid_multipart', label);
  }
  t.same(await emptied(dir), [], 'no spool file is left behind');
});

t.test('multipart: the rest of the form is still checked (second model field, truncation)', async (t) => {
  const dir = spoolDir(t);
  const body = multipart([
    { name: 'model', value: 'a' },
    { name: 'file', filename: 'f', value: 'data' },
    { name: 'model', value: 'b' },
  ]);
  // The first chunk holds the file part's headers: the form is ready (its attempt may begin) before the second model comes.
  const cut = body.indexOf('\r\n\r\ndata') + 4;
  const form = new SpooledFormBody(source([body.subarray(0, cut), body.subarray(cut)]), CONTENT_TYPE, dir);
  const found = await form.ready;
  t.equal(found.model?.value, 'a');
  await rejectsWith(t, collect(form.read(modelSplice(found, 'u'))), 'invalid_multipart');
  await rejectsWith(t, collect(form.read(modelSplice(found, 'v'))), 'invalid_multipart', 'and so does every later attempt');
  form.release();
  const complete = multipart([{ name: 'model', value: 'a' }, { name: 'file', filename: 'f', value: 'data' }]);
  const truncated = new SpooledFormBody(source([complete.subarray(0, cut), complete.subarray(cut, -2)]), CONTENT_TYPE, dir);
  await rejectsWith(t, collect(truncated.read(modelSplice(await truncated.ready, 'u'))), 'invalid_multipart', 'no closing boundary');
  truncated.release();
  t.same(await emptied(dir), [], 'no spool file is left behind');
});

t.test('multipart: a form cut short never reaches a reader whole; its last 128 bytes wait for the closing boundary', async (t) => {
  const dir = spoolDir(t);
  const cutShort = multipart([{ name: 'model', value: 'a' }, { name: 'file', filename: 'f', value: 'd'.repeat(1000) }]).subarray(0, -2);
  const readable = new Readable({ read() {} });
  readable.push(cutShort);
  const form = new SpooledFormBody(readable, CONTENT_TYPE, dir);
  const received: Buffer[] = [];
  const reading = (async () => {
    for await (const chunk of form.read(modelSplice(await form.ready, 'u'))) received.push(chunk as Buffer);
  })();
  const got = () => received.reduce((sum, chunk) => sum + chunk.length, 0);
  for (let i = 0; i < 200 && got() < cutShort.length - 128; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.equal(got(), cutShort.length - 128, 'all but the last 128 bytes while the form still comes');
  readable.push(null);
  await rejectsWith(t, reading, 'invalid_multipart', 'then the read fails');
  t.equal(got(), cutShort.length - 128, 'without the rest');
  form.release();
});

t.test('multipart: resolves before the file exists; a read streams 32 MiB as the form arrives', async (t) => {
  const dir = spoolDir(t);
  const head = multipart([{ name: 'n', value: '1' }, { name: 'model', value: 'gpt-image-1' }, { name: 'prompt', value: 'p'.repeat(1000) }]).subarray(0, -`\r\n--${BOUNDARY}--`.length);
  const fileHead = Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="big.png"\r\n\r\n`);
  const piece = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919) % 251));
  piece.write('\r\n--', 100, 'latin1');
  const count = 512;
  const end = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const { gate, open } = opener();
  const { readable, state } = gatedSource(Buffer.concat([head, fileHead]), () => piece, count, end, gate);
  const form = new SpooledFormBody(readable, CONTENT_TYPE, dir);
  const found = await form.ready;
  t.notOk(state.tailStarted, 'resolved from the head alone');
  t.equal(found.model?.value, 'gpt-image-1');
  t.same(Object.fromEntries(found.fields), { n: '1', prompt: 'p'.repeat(1000) }, 'the fields between the model and the file too');
  const hash = createHash('sha256');
  let tailStartedAtFirstChunk: boolean | undefined;
  for await (const chunk of form.read(modelSplice(found, 'gpt-image-1.5'))) {
    if (tailStartedAtFirstChunk === undefined) {
      tailStartedAtFirstChunk = state.tailStarted;
      open();
    }
    hash.update(chunk as Buffer);
    // A slow reader: the form is spooled ahead of it.
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(tailStartedAtFirstChunk, false, 'the read began before the file part came');

  const expected = createHash('sha256');
  expected.update(Buffer.from(head.toString('latin1').replace('gpt-image-1', 'gpt-image-1.5'), 'latin1'));
  expected.update(fileHead);
  for (let i = 0; i < count; i++) expected.update(piece);
  expected.update(end);
  t.equal(hash.digest('hex'), expected.digest('hex'));
  form.release();
  t.same(await emptied(dir), [], 'release() removes the file');
});

t.test('BodyRewriteError carries its code', async (t) => {
  const error = new BodyRewriteError('invalid_json', 'bad');
  t.ok(error instanceof Error);
  t.equal(error.code, 'invalid_json');
  t.equal(error.name, 'BodyRewriteError');
});
