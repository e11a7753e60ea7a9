import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, rawRequest, waitForLog } from './helpers/dataplane-scenarios.ts';

// Usage is read from every answer (issue 4 item 6). A plain (non-stream) answer compressed
// although the gateway asked for `identity` goes to the client as sent, with its
// content-encoding, while its usage is read from the body decoded beside it.

// Priced below at 2 and 8 per million tokens: 1M input and 0.5M output cost 2 + 4.
const USAGE = { prompt_tokens: 1_000_000, completion_tokens: 500_000, total_tokens: 1_500_000 };
const RECORDED_USAGE = { input_tokens: 1_000_000, output_tokens: 500_000, cached_tokens: 0, reasoning_tokens: 0 };
const COST = 6;
const NO_USAGE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

/**
 * A completion of 6 MiB (base64 content before the usage, which completionJson puts last), over
 * 4 MiB gzip-compressed too: past the capture limit, the body is decoded as it arrives (below
 * it, whole at its end).
 */
const largeJson = () => Buffer.from(completionJson('vendor-chat', USAGE).replace('"content":"hi"', `"content":"${randomBytes(4.5 * 1024 * 1024).toString('base64')}"`));

async function chat(t: Test, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  await gw.store.modelPrices.put('vendor-chat', { input_per_mtok: 2, output_per_mtok: 8 }, 'manual');
  const send = async () => {
    // Read raw: no client decodes the bytes.
    const res = await rawRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
    return { res, record: await waitForLog(gw, String(res.headers['x-switchyard-request-id'])) };
  };
  return { upstream, send };
}

/** Writes `body` in pieces of `size` bytes, so that it reaches the gateway in several reads. */
async function writeInPieces(res: ServerResponse, body: Buffer, size: number, end = true) {
  for (let at = 0; at < body.length; at += size) {
    await new Promise<void>((resolve) => res.write(body.subarray(at, at + size), () => resolve()));
  }
  if (end) res.end();
}

for (const c of [
  { coding: 'gzip', encode: (b: Buffer) => gzipSync(b) },
  { coding: 'x-gzip', encode: (b: Buffer) => gzipSync(b) },
  { coding: 'deflate', encode: (b: Buffer) => deflateSync(b) },
  { coding: 'br', encode: (b: Buffer) => brotliCompressSync(b) },
  // Applied in the order listed: deflate first, then gzip.
  { coding: 'deflate, gzip', encode: (b: Buffer) => gzipSync(deflateSync(b)) },
]) {
  t.test(`a ${c.coding} chat completion goes as sent, and its usage and cost are recorded`, async (t) => {
    const sent = c.encode(Buffer.from(completionJson('vendor-chat', USAGE)));
    const { send } = await chat(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': c.coding });
      res.end(sent);
    });
    const { res, record } = await send();
    t.equal(res.status, 200);
    t.equal(res.headers['content-encoding'], c.coding, 'the upstream\'s content-encoding');
    t.ok(res.body.equals(sent), 'the compressed bytes as the upstream sent them');
    t.same(record.usage, RECORDED_USAGE);
    t.equal(record.cost, COST, 'cost from the model price');
    t.match(record, { status: 200, error_code: null });
  });
}

t.test('a gzip answer over 4 MiB decoded has its usage read from its decoded tail', async (t) => {
  const json = largeJson();
  t.ok(json.length > 4 * 1024 * 1024, 'larger decoded than the 4 MiB capture limit');
  const sent = gzipSync(json);
  const { send } = await chat(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(sent.length) });
    await writeInPieces(res, sent, 40_001);
  });
  const { res, record } = await send();
  t.equal(res.status, 200);
  t.equal(res.headers['content-encoding'], 'gzip');
  t.ok(res.body.equals(sent), 'the compressed bytes as the upstream sent them');
  t.same(record.usage, RECORDED_USAGE);
  t.equal(record.cost, COST);
});

t.test('a highly compressible gzip answer (decoded 300 times larger) has its usage read, the body passed whole', async (t) => {
  const json = Buffer.from(completionJson('vendor-chat', USAGE).replace('"content":"hi"', `"content":"${'a'.repeat(12 * 1024 * 1024)}"`));
  const sent = gzipSync(json);
  t.ok(sent.length * 300 < json.length, 'a small body that decodes to a large one');
  const { send } = await chat(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    await writeInPieces(res, sent, 1024);
  });
  const { res, record } = await send();
  t.ok(res.body.equals(sent), 'the compressed bytes as the upstream sent them');
  t.same(record.usage, RECORDED_USAGE);
});

t.test('a gzip-labelled answer that is not gzip goes as sent, recorded 200 without usage', async (t) => {
  // Plain JSON with its usage: were it read undecoded, the usage would be found.
  const sent = Buffer.from(completionJson('vendor-chat', USAGE));
  const { send } = await chat(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(sent);
  });
  for (const pass of ['first', 'second: the gateway still serves']) {
    const { res, record } = await send();
    t.equal(res.status, 200, pass);
    t.equal(res.headers['content-encoding'], 'gzip', pass);
    t.ok(res.body.equals(sent), `${pass}: the bytes as sent`);
    t.same(record.usage, NO_USAGE, `${pass}: usage unread`);
    t.equal(record.cost, 0, pass);
    t.match(record, { status: 200, error_code: null }, pass);
  }
});

t.test('a gzip answer over 4 MiB compressed that stops decoding midway goes as sent, recorded 200 without usage', async (t) => {
  // The whole JSON, usage included, flushed but not finished, then bytes that are no deflate
  // block (0xff: a reserved block type): the decoder fails while the body still arrives.
  const decodable = gzipSync(largeJson(), { finishFlush: constants.Z_SYNC_FLUSH });
  t.ok(decodable.length > 4 * 1024 * 1024, 'larger compressed than the capture limit');
  const garbage = Buffer.alloc(256 * 1024, 0xff);
  const sent = Buffer.concat([decodable, garbage]);
  const { send } = await chat(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    // Each given time to be decoded on its own: the usage is decoded before the failure, which
    // comes before the rest of the body.
    const pause = () => new Promise((resolve) => setTimeout(resolve, 50));
    await writeInPieces(res, decodable, 65_536, false);
    await pause();
    await new Promise<void>((resolve) => res.write(garbage.subarray(0, 4096), () => resolve()));
    await pause();
    await writeInPieces(res, garbage.subarray(4096), 4096);
  });
  const { res, record } = await send();
  t.equal(res.status, 200);
  t.equal(res.headers['content-encoding'], 'gzip');
  t.ok(res.body.equals(sent), 'the bytes as sent, those after the failure too');
  t.same(record.usage, NO_USAGE, 'a body that does not decode has its usage unread');
  t.match(record, { status: 200, error_code: null });
});

for (const size of ['small', 'over 4 MiB compressed'] as const) {
  t.test(`a gzip answer (${size}) cut short goes as sent, recorded 200 without usage`, async (t) => {
    const whole = gzipSync(size === 'small' ? Buffer.from(completionJson('vendor-chat', USAGE)) : largeJson());
    // Without its 8-byte trailer (checksum and length) the body did not end as gzip.
    const sent = whole.subarray(0, whole.length - 8);
    const { send } = await chat(t, async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      await writeInPieces(res, sent, 65_536);
    });
    const { res, record } = await send();
    t.equal(res.status, 200);
    t.ok(res.body.equals(sent), 'the bytes as sent');
    t.same(record.usage, NO_USAGE);
    t.match(record, { status: 200, error_code: null });
  });
}

t.test('an answer in a coding the gateway cannot decode goes as sent, its usage unread', async (t) => {
  const sent = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5]);
  const { send } = await chat(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    res.end(sent);
  });
  const { res, record } = await send();
  t.equal(res.headers['content-encoding'], 'zstd');
  t.ok(res.body.equals(sent), 'the bytes as sent');
  t.same(record.usage, NO_USAGE);
  t.match(record, { status: 200, error_code: null });
});

t.test('an uncompressed answer: usage read, body as sent', async (t) => {
  const sent = Buffer.from(completionJson('vendor-chat', USAGE));
  const { send } = await chat(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(sent);
  });
  const { res, record } = await send();
  t.equal(res.headers['content-encoding'], undefined);
  t.ok(res.body.equals(sent));
  t.same(record.usage, RECORDED_USAGE);
  t.equal(record.cost, COST);
});
