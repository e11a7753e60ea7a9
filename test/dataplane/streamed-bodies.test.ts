import { mkdtempSync, readdirSync, rmSync, watch } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { startDataPlane, seedRoute, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { MODEL_FIELD_BYTES } from '../../src/dataplane/body/index.ts';
import { deferred, eventually, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

const ok = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

t.test('multipart image edit streams through with only the model field rewritten', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'], recordBody: true });
  const form = new FormData();
  form.append('model', 'img');
  form.append('prompt', 'a red square');
  form.append('image', new Blob([Buffer.alloc(300_000, 7)], { type: 'image/png' }), 'in.png');
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: form });
  t.equal(res.status, 200);
  const seen = upstream.requests[0]!;
  const text = seen.body.toString('latin1');
  t.match(text, /name="model"\r\n\r\nvendor-img\r\n/);
  t.notMatch(text, /\r\n\r\nimg\r\n/);
  t.equal(seen.body.length, Number(seen.headers['content-length']), 'content-length follows the rewritten model');
  t.ok(seen.body.includes(Buffer.alloc(300_000, 7)), 'the file part arrives intact');
  await gw.logs.flush();
  const record = await gw.logs.get(res.headers.get('x-switchyard-request-id')!);
  t.match(record?.request_body, { state: 'recorded', original_bytes: Number(seen.body.length) - 'vendor-img'.length + 'img'.length });
});

t.test('a JSON body above the buffering size streams with the model rewritten', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { bufferedJsonBytes: 64 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'ocr', upstream: 'vendor-ocr' }], protocols: ['x-suite'] });
  const document = 'A'.repeat(2 * 1024 * 1024);
  const res = await fetch(`${gw.url}/v1/ocr`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'ocr', document: { type: 'document_url', document_url: `data:application/pdf;base64,${document}` } }) });
  t.equal(res.status, 200);
  const sent = JSON.parse(upstream.requests[0]!.body.toString());
  t.equal(sent.model, 'vendor-ocr');
  t.equal(sent.document.document_url.length, document.length + 'data:application/pdf;base64,'.length);
});

t.test('a streamed body over the limit is refused with 413', async (t) => {
  const gw = await startDataPlane({ maxBodyBytes: 1024 });
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'ocr', upstream: 'o' }], protocols: ['x-suite'] });
  const res = await fetch(`${gw.url}/v1/ocr`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'ocr', pad: 'x'.repeat(5000) }) });
  t.equal(res.status, 413);
  t.match(await res.json(), { error: { code: 'request_too_large' } });
});

t.test('a compressed body is refused with 415 before any upstream call, in the client\'s protocol', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'] });
  const json = await fetch(`${gw.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify({ model: 'img', prompt: 'p' })) });
  t.equal(json.status, 415);
  t.equal(json.headers.get('accept-encoding'), 'identity', 'saying which coding it takes');
  t.match(await json.json(), { error: { code: 'unsupported_content_encoding', type: 'invalid_request_error', message: /"gzip"/ } });
  const form = new FormData();
  form.append('model', 'img');
  form.append('image', new Blob([Buffer.alloc(1000, 7)], { type: 'image/png' }), 'in.png');
  const multipart = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-encoding': 'br' }, body: form });
  t.equal(multipart.status, 415, 'a form too');
  await multipart.body?.cancel();
  const identity = await fetch(`${gw.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-encoding': 'Identity' }, body: JSON.stringify({ model: 'img', prompt: 'p' }) });
  t.equal(identity.status, 200, 'identity is no compression');
  t.equal(upstream.requests.length, 1, 'only the uncompressed request reached the upstream');
  await gw.logs.flush();
  const record = await gw.logs.get(json.headers.get('x-switchyard-request-id')!);
  t.match(record, { status: 415, error_code: 'unsupported_content_encoding', attempt_count: 0 });
});

const sse = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
  res.write('data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}\n\n');
  res.end('data: [DONE]\n\n');
};

/** A chat body of about `size` bytes with `model` last, as the official SDKs order it. */
function largeChat(size: number, tail: string): string {
  return `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,${'QUJD'.repeat(size / 4)}"}}]}],"seed": 12345678901234567890,"x":1,"x":2.50${tail},"model":"chat"}`;
}

/** Every file that appears in `dir` while the test runs, and what is left at the end. */
function watchSpool(t: Test, dir: string) {
  const seen = new Set<string>();
  const watcher = watch(dir, (_event, name) => name && seen.add(name));
  t.teardown(() => watcher.close());
  return { seen, left: () => readdirSync(dir) };
}

function spoolDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-spool-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a 3 MiB chat completion with the model last is forwarded byte for byte but the mapped model', async (t) => {
  const dir = spoolDir(t);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { spoolDir: dir });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], recordBody: true });
  const body = largeChat(3 * 1024 * 1024, '');
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = upstream.requests[0]!;
  t.ok(seen.body.equals(Buffer.from(body.replace('"model":"chat"', '"model":"vendor-chat"'))), 'only the model value changed');
  t.equal(Number(seen.headers['content-length']), seen.body.length);
  await gw.logs.flush();
  const record = await gw.logs.get(res.headers.get('x-switchyard-request-id')!);
  t.match(record, { upstream_model: 'vendor-chat', request_body: { state: 'truncated', original_bytes: Buffer.byteLength(body) } });
  t.equal(record?.request_body?.body, Buffer.from(body).subarray(0, 1024 * 1024).toString('utf8'), 'its first MiB as text, as a buffered JSON body is recorded');
  t.notOk(record?.request_body && 'encoding' in record.request_body, 'not base64');
  await eventually(() => (readdirSync(dir).length === 0 ? true : undefined), 'the spooled body removed once the request ended');
});

t.test('a 3 MiB streaming chat completion asks for usage, and its usage is logged', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, sse, { spoolDir: spoolDir(t) });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const body = largeChat(3 * 1024 * 1024, ',"stream":true');
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  t.equal(res.status, 200);
  const text = await res.text();
  t.match(text, /"content":"hi"/);
  t.notMatch(text, /"usage"/, 'the usage chunk the gateway asked for does not reach the client');
  t.match(text, /data: \[DONE\]/);
  const seen = upstream.requests[0]!;
  const expected = body.replace('"model":"chat"}', '"model":"vendor-chat","stream_options":{"include_usage":true}}');
  t.ok(seen.body.equals(Buffer.from(expected)), 'include_usage spliced in before the closing brace');
  t.equal(Number(seen.headers['content-length']), seen.body.length);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record.usage, { input_tokens: 11, output_tokens: 4 });
});

t.test('a 3 MiB chat completion is sent again, whole, to the next credential after a 429', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (req, res) => {
      if (req.headers.authorization === 'Bearer sk-first') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '60' });
        return void res.end('{"error":{"message":"slow down"}}');
      }
      ok(req, res);
    },
    { spoolDir: spoolDir(t) },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: ['sk-first', 'sk-second'] });
  const body = largeChat(3 * 1024 * 1024, '');
  const send = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  // Round-robin: one of the first two requests starts with sk-first and fails over.
  for (const res of [await send(), await send()]) t.equal(res.status, 200);
  const expected = Buffer.from(body.replace('"model":"chat"}', '"model":"vendor-chat"}'));
  t.equal(upstream.requests.length, 3, 'one 429 and two answers');
  for (const seen of upstream.requests) t.ok(seen.body.equals(expected), `${seen.headers.authorization} received the whole body`);
});

t.test('a 3 MiB generateContent body (model in the path) passes unchanged', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { spoolDir: spoolDir(t) });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'gem', upstream: 'vendor-gem' }], protocols: ['x-generate'] });
  const body = `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"${'QUJD'.repeat(786432)}"}},{"text":"describe"}]}],"generationConfig":{"seed":12345678901234567890}}`;
  const res = await fetch(`${gw.url}/v1beta/models/gem:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = upstream.requests[0]!;
  t.equal(seen.url, '/v1beta/models/vendor-gem:generateContent');
  t.ok(seen.body.equals(Buffer.from(body)), 'the body arrives as sent');
  t.equal(Number(seen.headers['content-length']), seen.body.length);
});

t.test('a small chunked JSON body is parsed whole: its stream flag asks for usage', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, sse);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
    const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.write('{"stream":true,"messages":[],');
    req.end('"model":"chat"}');
  });
  t.equal(res.statusCode, 200);
  for await (const _ of res);
  t.equal(upstream.requests[0]?.body.toString(), '{"stream":true,"messages":[],"model":"vendor-chat","stream_options":{"include_usage":true}}');
  const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
  t.match(record.usage, { input_tokens: 11, output_tokens: 4 });
});

t.test('a chunked body over maxBodyBytes gets 413 and its spool file is removed', async (t) => {
  const dir = spoolDir(t);
  const spool = watchSpool(t, dir);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { spoolDir: dir, bufferedJsonBytes: 64 * 1024, maxBodyBytes: 1024 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'chat' }], protocols: ['x-completions'] });
  const body = Buffer.from(largeChat(2 * 1024 * 1024, ''));
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: Readable.toWeb(Readable.from([body.subarray(0, 512 * 1024), body.subarray(512 * 1024)])) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  t.equal(res.status, 413);
  t.match(await res.json(), { error: { code: 'request_too_large' } });
  t.ok(spool.seen.size > 0, 'the body was being spooled');
  await eventually(() => (spool.left().length === 0 ? true : undefined), 'the spool file removed');
  t.equal(upstream.requests.length, 0);
});

t.test('a client that leaves mid-upload leaves no spool file', async (t) => {
  const dir = spoolDir(t);
  const spool = watchSpool(t, dir);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { spoolDir: dir, bufferedJsonBytes: 64 * 1024 });
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'chat' }], protocols: ['x-completions'] });
  const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } });
  req.on('error', () => {});
  req.write(`{"messages":"${'A'.repeat(256 * 1024)}`);
  await eventually(() => (spool.seen.size > 0 ? true : undefined), 'the body being spooled');
  req.destroy();
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
  }, 'the log record of the abandoned request');
  t.equal(record.error_code, 'client_closed');
  t.equal(record.client_aborted, true);
  await eventually(() => (spool.left().length === 0 ? true : undefined), 'the spool file removed');
  t.equal(upstream.requests.length, 0);
});

t.test('a large binary answer (speech audio) reaches the client as it arrives, before the upstream has sent the rest', async (t) => {
  const first = Buffer.alloc(512 * 1024, 1);
  const rest = Buffer.alloc(512 * 1024, 2);
  const clientHasFirst = deferred();
  let restSent = false;
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg' });
    res.write(first);
    // The rest is held back until the client has the first part: a gateway that buffered the whole answer would never deliver it.
    await withTimeout(clientHasFirst.promise, 10_000, 'the client to receive the first part').catch(() => undefined);
    restSent = true;
    res.end(rest);
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'vendor-tts' }], protocols: ['x-suite'] });
  const res = await fetch(`${gw.url}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts', input: 'hello', voice: 'alloy' }) });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  let received = 0;
  await withTimeout(
    (async () => {
      while (received < first.length) {
        const { value, done } = await reader.read();
        if (done) break;
        parts.push(value);
        received += value.length;
      }
    })(),
    10_000,
    'the first part to reach the client',
  );
  t.equal(restSent, false, 'the first part arrived while the upstream still held the rest');
  clientHasFirst.resolve();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  t.ok(Buffer.concat(parts).equals(Buffer.concat([first, rest])), 'the client gets the upstream bytes as sent');
});

// ---- the responses namespace passthrough: a body the gateway reads nothing of -------------
// decisions.md §2: other /v1/responses/* paths are a namespace passthrough; note 3: passthrough
// does not guarantee upstream implementation, and upstream statuses are preserved. So the body
// goes on as sent, whatever its type, and the upstream judges it.

const passthroughBodies = [
  { name: 'a binary body', contentType: 'application/octet-stream', body: Buffer.from([0x00, 0xff, 0x7b, 0x22, 0x0a, 0x80, 0x01]), text: undefined },
  { name: 'a JSON array', contentType: 'application/json', body: Buffer.from('[{"op":"a"},{"op":"b"}]'), text: '[{"op":"a"},{"op":"b"}]' },
  { name: 'JSON with a duplicate key and exact number formatting', contentType: 'application/json', body: Buffer.from('{"n":1.50,"n":2e3, "x" : "é"}'), text: '{"n":1.50,"n":2e3, "x" : "é"}' },
];

for (const c of passthroughBodies) {
  t.test(`namespace passthrough: ${c.name} reaches the upstream as sent, with its content type, and is recorded`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(415, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not for this extension"}}');
    });
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-responses'], recordBody: true });
    const res = await fetch(`${gw.url}/v1/responses/vendor-ext/run`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': c.contentType }, body: c.body });
    t.equal(res.status, 415, "the upstream's status comes back");
    t.equal(await res.text(), '{"error":{"message":"not for this extension"}}');
    t.equal(upstream.requests.length, 1);
    const seen = upstream.requests[0]!;
    t.ok(seen.body.equals(c.body), 'the bytes as sent');
    t.equal(seen.headers['content-type'], c.contentType);
    t.equal(seen.headers['content-length'], String(c.body.length));
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    if (c.text !== undefined) t.same(record.request_body, { state: 'recorded', original_bytes: c.body.length, body: c.text }, 'recorded as its text');
    else {
      t.match(record.request_body, { state: 'recorded', original_bytes: c.body.length, encoding: 'base64' });
      t.ok(Buffer.from(String(record.request_body?.body), 'base64').equals(c.body), 'recorded as base64 of the bytes sent');
    }
  });
}

t.test('namespace passthrough: a body above the buffering size streams through as sent', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { bufferedJsonBytes: 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-responses'], recordBody: true });
  const body = Buffer.alloc(200 * 1024, 0x61);
  const res = await fetch(`${gw.url}/v1/responses/vendor-ext/upload`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'text/plain' }, body });
  t.equal(res.status, 200);
  t.ok(upstream.requests[0]!.body.equals(body), 'the bytes as sent');
  t.equal(upstream.requests[0]!.headers['content-length'], String(body.length));
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(record.request_body, { state: 'recorded', original_bytes: body.length, body: 'a'.repeat(body.length) }, 'recorded as its text');
});

t.test('namespace passthrough: an empty POST body reaches the upstream empty', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-responses'] });
  const res = await fetch(`${gw.url}/v1/responses/vendor-ext/ping`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` } });
  t.equal(res.status, 200);
  t.equal(upstream.requests[0]!.body.length, 0);
  t.equal(upstream.requests[0]!.headers['transfer-encoding'], undefined, 'not sent as a chunked body');
});

t.test('a voice upload (a form that names no model) passes as sent, however far into it its fields come', async (t) => {
  // Other forms are searched for their model (spooled past 8 x bufferedJsonBytes); a voice form has no model to find.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { bufferedJsonBytes: 16 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'vendor-tts' }], protocols: ['x-suite'], recordBody: true });
  const form = new FormData();
  form.append('file', new Blob([Buffer.alloc(300_000, 5)], { type: 'audio/wav' }), 'sample.wav');
  form.append('name', 'narrator');
  const res = await fetch(`${gw.url}/x-suite/v1/audio/voices`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: form });
  t.equal(res.status, 200);
  const seen = upstream.requests[0]!;
  t.ok(seen.body.includes(Buffer.alloc(300_000, 5)), 'the file arrives intact');
  t.match(seen.body.toString('latin1'), /name="name"\r\n\r\nnarrator\r\n/, 'the field after it too');
  t.match(String(seen.headers['content-type']), /^multipart\/form-data; boundary=/, 'with its boundary');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { operation: 'voices-create', request_body: { state: 'recorded', original_bytes: seen.body.length } });
});

t.test('a transcription form with a file past 8 x bufferedJsonBytes before its model is spooled, and forwarded with the mapped model', async (t) => {
  const dir = spoolDir(t);
  const spool = watchSpool(t, dir);
  // 16 KiB buffered: the model is looked for in memory up to 128 KiB, the file is 600 KB.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { spoolDir: dir, bufferedJsonBytes: 16 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper-large' }], protocols: ['x-suite'], recordBody: true });
  const audio = Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 31) % 256));
  const boundary = 'switchyard-test-boundary';
  const form = (model: string) =>
    Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="speech.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`),
      audio,
      Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n--${boundary}\r\nContent-Disposition: form-data; name="response_format"\r\n\r\njson\r\n--${boundary}--\r\n`),
    ]);
  const body = form('stt');
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = upstream.requests[0]!;
  t.ok(seen.body.equals(form('vendor-whisper-large')), 'the file intact, only the model value changed');
  t.equal(Number(seen.headers['content-length']), body.length - 'stt'.length + 'vendor-whisper-large'.length, 'content-length follows the rewritten model');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { upstream_model: 'vendor-whisper-large', request_body: { original_bytes: body.length } });
  t.ok(spool.seen.size > 0, 'the form was spooled');
  await eventually(() => (spool.left().length === 0 ? true : undefined), 'the spool file removed once the request ended');
});

for (const [route, channel, protocol] of [
  ['/v1/images/edits', 'ch09', 'x-images'],
  ['/v1/audio/transcriptions', 'ch03', 'x-suite'],
] as const) {
  t.test(`a client that leaves mid-upload of a form (${route}, model first) gets one record and the gateway keeps serving`, async (t) => {
    // An upstream that reads the upload as it comes, so the gateway is mid-forward when the client leaves.
    const receiving = deferred();
    const upstream = createServer((req, res) => {
      req.once('data', () => receiving.resolve());
      req.on('error', () => {}).resume();
      req.on('end', () => ok(undefined, res));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
    upstream.unref();
    const gw = await startDataPlane();
    t.teardown(() => gw.close());
    const { keyValue, key } = await seedRoute(gw.store, { channel, baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, models: [{ external: 'm', upstream: 'vendor-m' }], protocols: [protocol] });
    const boundary = 'XyZb';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
    const whole = Buffer.concat([Buffer.from(head), Buffer.alloc(200_000, 0x41), Buffer.from(`\r\n--${boundary}--\r\n`)]);
    const req = httpRequest(`${gw.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(whole.length) } });
    req.on('error', () => {});
    req.on('response', (res) => res.resume());
    req.write(whole.subarray(0, 120_000));
    await withTimeout(receiving.promise, 5000, 'the upload to reach the upstream');
    req.destroy();
    const record = await eventually(async () => {
      await gw.logs.flush();
      return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
    }, 'the log record of the abandoned upload');
    t.equal(record.client_aborted, true);
    await gw.logs.flush();
    t.equal((await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items.length, 1, 'one record');
    const after = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${keyValue}` } });
    t.equal(after.status, 200, 'the gateway still answers');
  });
}

for (const [size, what] of [[20, 'a small form'], [200_000, 'a form with a 200 KB file']] as const) {
  t.test(`${what} without its closing boundary never reaches the upstream whole, though its length was declared`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'] });
    const boundary = 'XyZb';
    const cut = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg\r\n--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
      Buffer.alloc(size, 0x41),
    ]);
    // fetch declares a Buffer's length itself.
    const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: cut });
    t.equal(res.status, 400);
    t.match(await res.json(), { error: { code: 'invalid_request_body' } });
    // The harness records a request only once its body has ended; an aborted upload is not one.
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.equal(upstream.requests.length, 0, 'the upstream got no complete request');
  });
}

/** Generous bound on waiting for the gateway to end a connection (node's keep-alive timeout ends a drained body that stops coming). */
const CLOSE_BOUND_MS = 20_000;

/** A raw connection to the gateway that only the gateway ends; `closed` resolves with all it received. */
function rawConnection(t: Test, gw: Gateway) {
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
  let received = '';
  let ended = false;
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  // Not events.once: a write the closed connection refuses (EPIPE) would reject it.
  const closed = new Promise<string>((resolve) =>
    socket.once('close', () => {
      ended = true;
      resolve(received);
    }),
  );
  t.teardown(() => void socket.destroy());
  // Writes until done or the gateway ends the connection, honouring backpressure.
  const send = async (pieces: Iterable<Buffer | string>) => {
    for (const piece of pieces) {
      if (ended) return;
      if (!socket.write(piece)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
    }
  };
  return { send, closed };
}

function parseRaw(text: string) {
  const split = text.indexOf('\r\n\r\n');
  return { head: text.slice(0, split), body: JSON.parse(text.slice(split + 4)) };
}

const chunk = (data: Buffer | string) => {
  const bytes = Buffer.from(data);
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
};

/**
 * A refusal the forwarding attempt made mid-stream, as the raw client got it: its status,
 * no `connection: close` (the rest of the body is drained), the error, and the key's one record naming the attempt.
 */
async function closingRefusalMidStream(t: Test, gw: Gateway, keyId: number, received: string, status: number, error: Record<string, unknown>) {
  t.match(received, new RegExp(`^HTTP/1\\.1 ${status} `), `refused ${status}`);
  const { head, body } = parseRaw(received);
  t.notMatch(head, /\r\nconnection: close(\r\n|$)/i, 'the rest of the body is read, not reset under a client still writing');
  t.match(body, { error });
  await gw.logs.flush();
  const [record] = (await gw.logs.list({ access_key_id: keyId }, { limit: 5 })).items;
  t.match(record, { status, error_code: error['code'], attempts: [{ error_code: error['code'] }] }, 'refused by the forwarding attempt, mid-stream');
}

/** A chunked transcription form for model `stt`, the model part first, then 4 MiB of a file, and never its last chunk. */
function* modelFirstEndlessForm(keyValue: string) {
  const boundary = 'XyZb';
  yield `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ntransfer-encoding: chunked\r\n\r\n`;
  yield chunk(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nstt\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\n`);
  for (let i = 0; i < 64; i++) yield chunk(Buffer.alloc(64 * 1024, 0x41));
}

t.test('a chunked form refused past maxBodyBytes while it streams upstream gets 413, and the gateway ends the connection once the body stops coming', async (t) => {
  const upstream = await upstreamThatReads(t);
  const gw = await startDataPlane({ maxBodyBytes: 256 * 1024 });
  t.teardown(() => gw.close());
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'] });
  const conn = rawConnection(t, gw);
  // The model first, so the form is already streaming upstream when it passes the limit.
  void conn.send(modelFirstEndlessForm(keyValue));
  const received = await withTimeout(conn.closed, CLOSE_BOUND_MS, 'the gateway to end the connection');
  await closingRefusalMidStream(t, gw, key.id, received, 413, { code: 'request_too_large' });
});

t.test('a declared-length form with a second model after a file part gets 400, and the gateway ends the connection once the body stops coming', async (t) => {
  const upstream = await upstreamThatReads(t);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'] });
  const boundary = 'XyZb';
  const model = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nstt\r\n`;
  const form = `${model}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\n${'A'.repeat(300_000)}\r\n${model}`;
  const conn = rawConnection(t, gw);
  // A megabyte more is declared than is sent: the rest never comes.
  void conn.send([`POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${form.length + 1_000_000}\r\n\r\n${form}`]);
  const received = await withTimeout(conn.closed, CLOSE_BOUND_MS, 'the gateway to end the connection');
  await closingRefusalMidStream(t, gw, key.id, received, 400, { code: 'invalid_request_body', message: /duplicate model/ });
});

t.test('a form whose model value passes the model cap is refused 400 before any upstream call, and neither quoted nor logged whole', async (t) => {
  const upstream = await upstreamThatReads(t);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'] });
  const boundary = 'XyZb';
  const longModel = 'm'.repeat(2048);
  const form = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${longModel}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\n${'A'.repeat(1000)}\r\n--${boundary}--\r\n`;
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
  t.equal(res.status, 400);
  const text = await res.text();
  t.match(JSON.parse(text), { error: { code: 'invalid_request_body' } });
  t.notOk(text.includes('m'.repeat(MODEL_FIELD_BYTES + 1)), 'the answer does not quote the value past the cap');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 400, error_code: 'invalid_request_body', attempt_count: 0 });
  t.ok((record.external_model ?? '').length <= MODEL_FIELD_BYTES, 'the record keeps no model past the cap');
  t.equal(upstream.started(), 0, 'no upstream call');
});

t.test('a model value is refused as soon as it passes the cap, while the form is still coming', async (t) => {
  const upstream = await upstreamThatReads(t);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'] });
  const boundary = 'XyZb';
  const conn = rawConnection(t, gw);
  // The value never ends and neither does the body: only a refusal at the cap answers it.
  void conn.send([
    `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${keyValue}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ntransfer-encoding: chunked\r\n\r\n`,
    chunk(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${'m'.repeat(MODEL_FIELD_BYTES + 1)}`),
  ]);
  const received = await withTimeout(conn.closed, CLOSE_BOUND_MS, 'the gateway to answer and end the connection');
  t.match(received, /^HTTP\/1\.1 400 /, 'refused');
  const { head, body } = parseRaw(received);
  t.notMatch(head, /\r\nconnection: close(\r\n|$)/i, 'the rest of the body is read, not reset under a client still writing');
  t.match(body, { error: { code: 'invalid_request_body' } });
  t.equal(upstream.started(), 0, 'no upstream call');
});

/** An upstream that reads each body as it comes and counts the requests that reached it at all. */
async function upstreamThatReads(t: Test): Promise<{ url: string; started: () => number }> {
  let started = 0;
  const server = createServer((req, res) => {
    started += 1;
    req.on('error', () => {}).resume();
    req.on('end', () => ok(undefined, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, started: () => started };
}

for (const answer of [
  { status: 400, body: { error: { message: 'bad audio', type: 'invalid_request_error' } }, errorCode: 'upstream_400' },
  { status: 200, body: { text: 'early' }, errorCode: null },
]) {
  t.test(`an upstream ${answer.status} given before it read the form is passed on, and the gateway ends the connection once the body stops coming`, async (t) => {
    // Answers as soon as the request's head arrives, reading none of its body.
    let started = 0;
    const server = createServer((_req, res) => {
      started += 1;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const gw = await startDataPlane();
    t.teardown(() => gw.close());
    const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'] });
    const conn = rawConnection(t, gw);
    // The model first, so the form is already streaming upstream when the upstream answers.
    void conn.send(modelFirstEndlessForm(keyValue));
    const received = await withTimeout(conn.closed, CLOSE_BOUND_MS, 'the gateway to end the connection');
    t.match(received, new RegExp(`^HTTP/1\\.1 ${answer.status} `), "the upstream's status");
    const split = received.indexOf('\r\n\r\n');
    const head = received.slice(0, split);
    t.notMatch(head, /\r\nconnection: close(\r\n|$)/i, 'the rest of the body is read, not reset under a client still writing');
    // Whole or chunked, as the gateway frames it.
    t.ok(received.slice(split + 4).includes(JSON.stringify(answer.body)), "the upstream's body");
    t.equal(started, 1, 'one upstream call');
    await gw.logs.flush();
    const [record] = (await gw.logs.list({ access_key_id: key.id }, { limit: 5 })).items;
    t.match(record, { status: answer.status, error_code: answer.errorCode });
  });
}
