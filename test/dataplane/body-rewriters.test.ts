import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t, { type Test } from 'tap';
import {
  BodyRewriteError,
  SMALL_FIELD_BYTES,
  rewriteJsonModelStream,
  rewriteMultipartModelStream,
  type ModelRewrite,
} from '../../src/dataplane/body/index.ts';

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

async function rewriteAll(rewrite: ModelRewrite, upstream: string) {
  const { body, lengthDelta } = rewrite.replaceModel(upstream);
  return { out: await collect(body), lengthDelta };
}

async function rejectsWith(t: Test, promise: Promise<unknown>, code: string, label?: string) {
  await t.rejects(promise, { name: 'BodyRewriteError', code }, label ?? code);
}

/**
 * A source that produces `head`, then `tailChunks` of `tail`, then `end`, but starts the tail
 * only when `gate` opens, and counts how far it runs ahead of the consumer.
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

/** Consumes slowly, hashing, and records the most bytes the source was ever ahead. */
async function consumeSlowly(body: Readable, produced: () => number) {
  const hash = createHash('sha256');
  let consumed = 0;
  let maxAhead = 0;
  await pipeline(
    body,
    new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _encoding, callback) {
        consumed += chunk.length;
        maxAhead = Math.max(maxAhead, produced() - consumed);
        hash.update(chunk);
        setImmediate(callback);
      },
    }),
  );
  return { digest: hash.digest('hex'), consumed, maxAhead };
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

t.test('JSON: top-level model at every split point; nested keys and escapes ignored', async (t) => {
  const body = Buffer.from(JSON_BEFORE + MODEL_TOKEN + JSON_AFTER);
  const upstream = 'upstream/ü-"1"';
  const expected = Buffer.from(JSON_BEFORE + JSON.stringify(upstream) + JSON_AFTER);
  t.same(JSON.parse(expected.toString()).model, upstream);
  for (const { label, chunks } of splits(body)) {
    const rewrite = await rewriteJsonModelStream(source(chunks), { maxPrefixBytes: LIMIT });
    if (rewrite.model !== 'gpt-ü"x\\ é') t.fail(`${label}: model ${rewrite.model}`);
    const { out, lengthDelta } = await rewriteAll(rewrite, upstream);
    if (!out.equals(expected)) t.fail(`${label}: ${out.toString()}`);
    if (lengthDelta !== expected.length - body.length) t.fail(`${label}: delta ${lengthDelta}`);
  }
  t.pass('all splits');
});

t.test('JSON: a key spelt with escapes is the model; similar keys are not', async (t) => {
  const rewrite = await rewriteJsonModelStream(source(['{"Model":"a","model ":"b","mod\\u0065l":"c"}']), {
    maxPrefixBytes: LIMIT,
  });
  t.equal(rewrite.model, 'c');
  t.equal((await rewriteAll(rewrite, 'd')).out.toString(), '{"Model":"a","model ":"b","mod\\u0065l":"d"}');
});

t.test('JSON: lengthDelta gives the new content-length', async (t) => {
  const body = '{"model":"gpt-4o","input":"hi"}';
  for (const [upstream, delta] of [['gpt-4o', 0], ['openai/gpt-4o-2024-08-06', 18], ['m', -5], ['é', -4]] as const) {
    const { out, lengthDelta } = await rewriteAll(
      await rewriteJsonModelStream(source([body]), { maxPrefixBytes: LIMIT }),
      upstream,
    );
    t.equal(lengthDelta, delta, upstream);
    t.equal(out.length, Buffer.byteLength(body) + lengthDelta, upstream);
  }
});

t.test('JSON: without a top-level model the original bytes come back', async (t) => {
  for (const body of ['{"input":{"model":"x"}} ', '{}', '[{"model":"x"}]', '"model"', ' 42 ']) {
    for (const { label, chunks } of splits(Buffer.from(body))) {
      const rewrite = await rewriteJsonModelStream(source(chunks), { maxPrefixBytes: LIMIT });
      const { out, lengthDelta } = await rewriteAll(rewrite, 'ignored');
      if (rewrite.model !== undefined || lengthDelta !== 0 || out.toString() !== body) t.fail(`${body} ${label}`);
    }
  }
  t.pass('all splits');
});

t.test('JSON: malformed input before the model is invalid_json', async (t) => {
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
    '{"a":1} {"model":"x"}',
    '{"model":42}',
    '{"model":"a","model":"b"}',
    '{"model":"\xff"}',
    '\ufeff{"model":"x"}',
    '['.repeat(200),
  ];
  for (const body of bodies) {
    const bytes = body === '{"model":"\xff"}' ? Buffer.from(body, 'latin1') : Buffer.from(body);
    await rejectsWith(t, rewriteJsonModelStream(source([bytes]), { maxPrefixBytes: LIMIT }), 'invalid_json', JSON.stringify(body));
  }
});

t.test('JSON: model after a large field fails beyond the prefix limit', async (t) => {
  const big = 'A'.repeat(100_000);
  const body = `{"file":"${big}","model":"m"}`;
  const chunks = (size: number) => Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.slice(i * size, (i + 1) * size));
  await rejectsWith(t, rewriteJsonModelStream(source(chunks(4096)), { maxPrefixBytes: LIMIT }), 'model_not_found_within_limit');
  // The limit is about where the model ends, not about how the source happens to be chunked.
  await rejectsWith(t, rewriteJsonModelStream(source([body]), { maxPrefixBytes: LIMIT }), 'model_not_found_within_limit');
  const end = body.length - 1; // the member ends just before the closing brace
  t.equal((await rewriteJsonModelStream(source(chunks(4096)), { maxPrefixBytes: end })).model, 'm');
  await rejectsWith(t, rewriteJsonModelStream(source(chunks(4096)), { maxPrefixBytes: end - 1 }), 'model_not_found_within_limit');
  // A body without a model must also end within the limit.
  await rejectsWith(t, rewriteJsonModelStream(source([`{"file":"${big}"}`]), { maxPrefixBytes: LIMIT }), 'model_not_found_within_limit');
});

t.test('JSON: a rejected source is left paused and undestroyed for the caller', async (t) => {
  const src = source(['{"file":"', 'A'.repeat(2000), '","model":"m"}']);
  await rejectsWith(t, rewriteJsonModelStream(src, { maxPrefixBytes: 100 }), 'model_not_found_within_limit');
  t.notOk(src.destroyed);
  t.ok(src.isPaused());
  t.equal((await collect(src)).toString(), '","model":"m"}', 'the caller can still drain the rest');
});

t.test('JSON: source errors reject the scan and error the body', async (t) => {
  const early = new Readable({ read() {} });
  early.push('{"a":');
  setImmediate(() => early.destroy(new Error('client went away')));
  await t.rejects(rewriteJsonModelStream(early, { maxPrefixBytes: LIMIT }), { message: 'client went away' });

  const late = new Readable({ read() {} });
  late.push('{"model":"m","a":');
  const rewrite = await rewriteJsonModelStream(late, { maxPrefixBytes: LIMIT });
  const { body } = rewrite.replaceModel('u');
  setImmediate(() => late.destroy(new Error('reset')));
  await t.rejects(collect(body), { message: 'reset' });
  t.throws(() => rewrite.replaceModel('u'), /already been taken/);

  // Destroyed between the scan and replaceModel(), while nobody was listening.
  const idle = new Readable({ read() {} });
  idle.push('{"model":"m"');
  const waiting = await rewriteJsonModelStream(idle, { maxPrefixBytes: LIMIT });
  idle.destroy(new Error('gone'));
  await new Promise((resolve) => setImmediate(resolve));
  await t.rejects(collect(waiting.replaceModel('u').body), { message: 'gone' });
});

t.test('JSON: the streamed tail is still checked; a second model never reaches the upstream', async (t) => {
  const dup = await rewriteJsonModelStream(source(['{"model":"a","x":1', ',"model":"b"}']), { maxPrefixBytes: LIMIT });
  const received: Buffer[] = [];
  const { body } = dup.replaceModel('u');
  body.on('data', (chunk: Buffer) => received.push(chunk));
  await t.rejects(new Promise((resolve, reject) => body.on('end', resolve).on('error', reject)), {
    name: 'BodyRewriteError',
    code: 'invalid_json',
    message: /duplicate/,
  });
  t.equal(Buffer.concat(received).toString(), '{"model":"u","x":1');

  const broken = await rewriteJsonModelStream(source(['{"model":"a"', ',"x":[}']), { maxPrefixBytes: LIMIT });
  await rejectsWith(t, collect(broken.replaceModel('u').body), 'invalid_json');
  const truncated = await rewriteJsonModelStream(source(['{"model":"a"', ',"x":']), { maxPrefixBytes: LIMIT });
  await rejectsWith(t, collect(truncated.replaceModel('u').body), 'invalid_json');
});

t.test('JSON: resolves before the tail exists and streams 32 MiB with backpressure', async (t) => {
  const head = Buffer.from('{"model":"ocr-ext","document":{"type":"document_url","document_url":"data:application/pdf;base64,');
  const piece = Buffer.alloc(64 * 1024, 'QUJD');
  const count = 512;
  const end = Buffer.from('"}}');
  const { gate, open } = opener();
  const { readable, state } = gatedSource(head, () => piece, count, end, gate);
  const rewrite = await rewriteJsonModelStream(readable, { maxPrefixBytes: LIMIT });
  t.notOk(state.tailStarted, 'resolved from the head alone');
  t.equal(rewrite.model, 'ocr-ext');
  open();
  const { body, lengthDelta } = rewrite.replaceModel('mistral-ocr-latest');
  const result = await consumeSlowly(body, () => state.produced);

  const expected = createHash('sha256');
  expected.update(head.toString().replace('"ocr-ext"', '"mistral-ocr-latest"'));
  for (let i = 0; i < count; i++) expected.update(piece);
  expected.update(end);
  t.equal(result.digest, expected.digest('hex'));
  t.equal(result.consumed, head.length + count * piece.length + end.length + lengthDelta);
  t.ok(result.maxAhead < 1024 * 1024, `source stayed within ${result.maxAhead} bytes of the consumer`);
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

// Binary that holds near-misses of the delimiter, which must not end the part.
const TRICKY_FILE = Buffer.concat([
  Buffer.from([0, 0xff, 0x0d, 0x0a, 0x2d, 0x2d]),
  Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}\r\n\r\n--\r`),
  Buffer.from(`--${BOUNDARY}\r\n`),
]);

t.test('multipart: model field at every split point; fields before it are reported', async (t) => {
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
  for (const { label, chunks } of splits(body)) {
    const rewrite = await rewriteMultipartModelStream(source(chunks), { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT });
    if (rewrite.model !== 'gpt-image-1 ü') t.fail(`${label}: model ${rewrite.model}`);
    const fields = Object.fromEntries(rewrite.fields);
    if (JSON.stringify(fields) !== JSON.stringify({ prompt: 'a cat\r\n--not a boundary', stream: 'true', n: '2' })) {
      t.fail(`${label}: fields ${JSON.stringify(fields)}`);
    }
    const { out, lengthDelta } = await rewriteAll(rewrite, 'upstream-image');
    if (!out.equals(expected)) t.fail(`${label}: ${JSON.stringify(out.toString('latin1'))}`);
    if (lengthDelta !== expected.length - body.length) t.fail(`${label}: delta ${lengthDelta}`);
  }
  t.pass('all splits');
});

t.test('multipart: model after the file part works within the limit', async (t) => {
  const file = Buffer.alloc(20_000, 7);
  const parts = (model: string): Part[] => [
    { name: 'file', filename: 'speech.mp3', value: file },
    { name: 'model', value: model },
    { name: 'response_format', value: 'verbose_json' },
  ];
  const body = multipart(parts('whisper-1'));
  const chunks = Array.from({ length: Math.ceil(body.length / 1000) }, (_, i) => body.subarray(i * 1000, (i + 1) * 1000));
  const rewrite = await rewriteMultipartModelStream(source(chunks), { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT });
  t.equal(rewrite.model, 'whisper-1');
  t.same(Object.fromEntries(rewrite.fields), {}, 'fields after the model are not seen; files never are');
  const { out, lengthDelta } = await rewriteAll(rewrite, 'whisper-large-v3');
  t.ok(out.equals(multipart(parts('whisper-large-v3'))));
  t.equal(lengthDelta, 7);

  await rejectsWith(
    t,
    rewriteMultipartModelStream(source(chunks), { contentType: CONTENT_TYPE, maxPrefixBytes: 10_000 }),
    'model_not_found_within_limit',
  );
});

t.test('multipart: a file named "model" is not the model field', async (t) => {
  const body = multipart([
    { name: 'model', filename: 'model.bin', value: 'weights' },
    { header: 'Content-Disposition: form-data; name="model"; filename*=UTF-8\'\'m.bin', value: 'more' },
    { header: 'Content-Disposition: form-data; name="mo\\"del"', value: 'quoted' },
    { name: 'model', value: 'tts-1' },
  ]);
  const rewrite = await rewriteMultipartModelStream(source([body]), { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT });
  t.equal(rewrite.model, 'tts-1');
  t.same(Object.fromEntries(rewrite.fields), { 'mo"del': 'quoted' });
});

t.test('multipart: without a model field the original bytes come back', async (t) => {
  const body = multipart(
    [
      { name: 'stream', value: 'false' },
      { name: 'big', value: 'x'.repeat(SMALL_FIELD_BYTES + 1) },
      { name: 'empty', value: '' },
      { name: 'file', filename: 'a.png', value: TRICKY_FILE },
    ],
    { epilogue: '\r\nepilogue --' },
  );
  for (const { label, chunks } of splits(body)) {
    const rewrite = await rewriteMultipartModelStream(source(chunks), { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT });
    const { out, lengthDelta } = await rewriteAll(rewrite, 'ignored');
    if (rewrite.model !== undefined || lengthDelta !== 0 || !out.equals(body)) t.fail(label);
    if (JSON.stringify(Object.fromEntries(rewrite.fields)) !== '{"stream":"false","empty":""}') t.fail(`${label}: fields`);
  }
  t.pass('all splits');
});

t.test('multipart: quoted boundary, transport padding, empty model value', async (t) => {
  const boundary = 'a b:c';
  const body = `--${boundary} \t\r\nContent-Disposition: form-data; name=model\r\n\r\n\r\n--${boundary}--`;
  const rewrite = await rewriteMultipartModelStream(source([body]), {
    contentType: `Multipart/Form-Data; charset=utf-8; boundary="${boundary}"`,
    maxPrefixBytes: LIMIT,
  });
  t.equal(rewrite.model, '');
  const { out, lengthDelta } = await rewriteAll(rewrite, 'dall-e-2');
  t.equal(out.toString(), body.replace('\r\n\r\n\r\n', '\r\n\r\ndall-e-2\r\n'));
  t.equal(lengthDelta, 8);
});

t.test('multipart: malformed bodies and headers are invalid_multipart', async (t) => {
  for (const contentType of [undefined, 'application/json', 'multipart/form-data', `multipart/mixed; boundary=${BOUNDARY}`, `multipart/form-data; boundary=${'b'.repeat(71)}`, `multipart/form-data; boundary=x; boundary=y`]) {
    await rejectsWith(t, rewriteMultipartModelStream(source(['']), { contentType, maxPrefixBytes: LIMIT }), 'invalid_multipart', contentType);
  }
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
  ];
  for (const [label, body] of bodies) {
    await rejectsWith(t, rewriteMultipartModelStream(source([body]), { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT }), 'invalid_multipart', label);
  }
});

t.test('multipart: the streamed tail is still checked (second model field, truncation)', async (t) => {
  const body = multipart([
    { name: 'model', value: 'a' },
    { name: 'file', filename: 'f', value: 'data' },
    { name: 'model', value: 'b' },
  ]);
  const cut = body.indexOf('\r\n\r\ndata');
  const rewrite = await rewriteMultipartModelStream(source([body.subarray(0, cut), body.subarray(cut)]), {
    contentType: CONTENT_TYPE,
    maxPrefixBytes: LIMIT,
  });
  t.equal(rewrite.model, 'a');
  await rejectsWith(t, collect(rewrite.replaceModel('u').body), 'invalid_multipart');
  t.throws(() => rewrite.replaceModel('u'), /already been taken/);
  const complete = multipart([{ name: 'model', value: 'a' }, { name: 'file', filename: 'f', value: 'data' }]);
  const truncated = await rewriteMultipartModelStream(source([complete.subarray(0, cut), complete.subarray(cut, -2)]), {
    contentType: CONTENT_TYPE,
    maxPrefixBytes: LIMIT,
  });
  await rejectsWith(t, collect(truncated.replaceModel('u').body), 'invalid_multipart', 'no closing boundary');
  const crlf = await rewriteMultipartModelStream(source([multipart([{ name: 'model', value: 'a' }])]), {
    contentType: CONTENT_TYPE,
    maxPrefixBytes: LIMIT,
  });
  t.throws(() => crlf.replaceModel('x\r\n'), RangeError);
});

t.test('multipart: resolves before the file exists and streams 32 MiB with backpressure', async (t) => {
  const head = multipart([{ name: 'n', value: '1' }, { name: 'model', value: 'gpt-image-1' }]).subarray(0, -`\r\n--${BOUNDARY}--`.length);
  const fileHead = Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="big.png"\r\n\r\n`);
  const piece = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919) % 251));
  piece.write('\r\n--', 100, 'latin1');
  const count = 512;
  const end = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const { gate, open } = opener();
  const { readable, state } = gatedSource(Buffer.concat([head, fileHead]), () => piece, count, end, gate);
  const rewrite = await rewriteMultipartModelStream(readable, { contentType: CONTENT_TYPE, maxPrefixBytes: LIMIT });
  t.notOk(state.tailStarted, 'resolved from the head alone');
  t.equal(rewrite.model, 'gpt-image-1');
  t.same(Object.fromEntries(rewrite.fields), { n: '1' });
  open();
  const { body, lengthDelta } = rewrite.replaceModel('gpt-image-1.5');
  const result = await consumeSlowly(body, () => state.produced);

  const expected = createHash('sha256');
  expected.update(Buffer.from(head.toString('latin1').replace('gpt-image-1', 'gpt-image-1.5'), 'latin1'));
  expected.update(fileHead);
  for (let i = 0; i < count; i++) expected.update(piece);
  expected.update(end);
  t.equal(result.digest, expected.digest('hex'));
  t.equal(lengthDelta, 2);
  t.ok(result.maxAhead < 1024 * 1024, `source stayed within ${result.maxAhead} bytes of the consumer`);
});

t.test('BodyRewriteError carries its code', async (t) => {
  const error = new BodyRewriteError('invalid_json', 'bad');
  t.ok(error instanceof Error);
  t.equal(error.code, 'invalid_json');
  t.equal(error.name, 'BodyRewriteError');
});
