import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { MAX_SCANNED_MEMBERS, attemptSplices, receiveJsonBody, type ReceiveJsonOptions } from '../../src/dataplane/body/index.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { eventually, waitForLog } from './helpers/dataplane-scenarios.ts';

function options(t: Test, o: Partial<ReceiveJsonOptions> = {}): ReceiveJsonOptions {
  const spoolDir = mkdtempSync(path.join(tmpdir(), 'switchyard-spool-unit-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  return { declared: undefined, maxBodyBytes: 1024 * 1024, bufferedJsonBytes: 1024, spoolDir, wanted: new Map([['model', 100], ['stream_options', 100]]), keepBytes: 10, ...o };
}

async function text(stream: Readable): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString();
}

t.test('a body that ends within bufferedJsonBytes comes back whole, without a file', async (t) => {
  const o = options(t);
  const received = await receiveJsonBody(Readable.from([Buffer.from('{"model":'), Buffer.from('"m"}')]), o);
  t.same(received.kind === 'buffered' && received.raw.toString(), '{"model":"m"}');
  t.same(readdirSync(o.spoolDir), []);
});

t.test('a spooled body can be read once per attempt with the splices applied, until released', async (t) => {
  const o = options(t);
  const padding = 'x'.repeat(5000);
  const body = `{"stream_options":{"a":1},"pad":"${padding}","model":"ext","stream":true}`;
  const received = await receiveJsonBody(Readable.from([Buffer.from(body.slice(0, 700)), Buffer.from(body.slice(700))]), o);
  if (received.kind !== 'spooled') return t.fail('not spooled');
  const spooled = received.body;
  t.equal(readdirSync(o.spoolDir).length, 1);
  t.equal(spooled.head.toString(), body.slice(0, 10), 'keeps keepBytes for the log');
  const splices = attemptSplices(spooled.scanned, (m) => m.raw!, 'vendor-1', true);
  const expected = body.replace('"ext"', '"vendor-1"').replace('{"a":1}', '{"a":1,"include_usage":true}');
  for (const attempt of [1, 2]) {
    const { stream, length } = spooled.read(splices);
    t.equal(await text(stream), expected, `attempt ${attempt}`);
    t.equal(length, Buffer.byteLength(expected));
  }
  spooled.release();
  await eventually(() => (readdirSync(o.spoolDir).length === 0 ? true : undefined), 'the file removed on release');
});

t.test('malformed JSON, a body over maxBodyBytes and a failing source leave no file', async (t) => {
  const o = options(t, { maxBodyBytes: 4000 });
  const big = `{"a":"${'y'.repeat(2000)}`;
  const malformed = [Buffer.from(big), Buffer.from('", "b":}')];
  await t.rejects(receiveJsonBody(Readable.from(malformed), { ...o, keepBytes: 0 }), { name: 'BodyRewriteError', code: 'invalid_json' });
  // Kept for the log: the verdict comes with the body's first keepBytes and its size.
  await t.rejects(receiveJsonBody(Readable.from(malformed), o), { name: 'RefusedBodyPrefix', refusal: { name: 'BodyRewriteError', code: 'invalid_json' }, head: Buffer.from(big.slice(0, 10)), arrived: big.length + 8 });
  await t.rejects(receiveJsonBody(Readable.from([Buffer.from(big), Buffer.from(big), Buffer.from(big)]), { ...o, keepBytes: 0 }), { code: 'request_too_large' });
  // Cut short: the refusal comes with what arrived (the chunk past the limit not kept) and its size.
  await t.rejects(receiveJsonBody(Readable.from([Buffer.from(big), Buffer.from(big), Buffer.from(big)]), o), { name: 'RefusedBodyPrefix', refusal: { code: 'request_too_large' }, head: Buffer.from(big.slice(0, 10)), arrived: big.length * 2 });
  const failing = new Readable({ read() {} });
  failing.push(big);
  setImmediate(() => failing.destroy(new Error('reset')));
  await t.rejects(receiveJsonBody(failing, o), { name: 'RefusedBodyPrefix', refusal: { code: 'client_closed' }, arrived: big.length });
  await eventually(() => (readdirSync(o.spoolDir).length === 0 ? true : undefined), 'no file left');
});

t.test('through the gateway, a spooled body with many large duplicates of the members a rule reads is refused, whatever the last one is', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"results":[]}');
    },
    { bufferedJsonBytes: 64 * 1024 },
  );
  // Rerank (note 5) refuses any input that is not text: routing reads the last duplicate, an
  // upstream might read the first, so a repeated query or documents is refused outright.
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch21', baseUrl: upstream.url, models: [{ external: 'rr', upstream: 'rr' }], protocols: ['rerank'] });
  const rerank = (body: string) => fetch(`${gw.url}/v1/rerank`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  const text = (i: number) => `["doc ${i} ${'t'.repeat(30_000)}","${'u'.repeat(29_000)}"]`;
  const image = (i: number) => `[{"image":"data:image/png;base64,${i}${'A'.repeat(60_000)}"}]`;
  const duplicates = (value: (i: number) => string, last: string) =>
    `{"model":"rr",${Array.from({ length: 40 }, (_, i) => `"query":"q${i}","documents":${value(i)}`).join(',')},"query":"last","documents":${last}}`;

  const bodies: Array<[string, string]> = [
    ['forty image duplicates, then text', duplicates(image, text(40))],
    ['forty text duplicates, then images', duplicates(text, image(40))],
    ['images, then an array too large to tell', duplicates(image, `[${text(41)},${text(42)},${text(43)}]`)],
  ];
  for (const [label, body] of bodies) {
    t.ok(body.length > 2 * 1024 * 1024, `${label}: a body of large duplicates`);
    const res = await rerank(body);
    t.equal(res.status, 400, `${label}: refused`);
    t.match(await res.json(), { error: { code: 'invalid_request_body', message: 'more than one top-level "query" member' } }, label);
  }
  t.equal(upstream.requests.length, 0, 'none went upstream');
});

t.test('through the gateway, a spooled body naming its members too many times is refused before any upstream call, and its file removed', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[]}');
    },
    { bufferedJsonBytes: 64 * 1024 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'emb', upstream: 'emb-up' }], protocols: ['x-chat-embeddings'] });
  const embed = (models: number) =>
    fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
      body: `{"input":"x",${Array.from({ length: models }, () => '"model":"emb"').join(',')}}`,
    });

  // The input member counts too: the bound is on every member the gateway reads. Only a
  // repeated model is not refused for itself (each copy is replaced with the routed one).
  const atBound = await embed(MAX_SCANNED_MEMBERS - 1);
  t.equal(atBound.status, 200, 'exactly the bound: forwarded');
  await atBound.arrayBuffer();
  const refused = await embed(MAX_SCANNED_MEMBERS);
  t.equal(refused.status, 400);
  t.match(await refused.json(), { error: { code: 'invalid_request_body', message: new RegExp(`more than ${MAX_SCANNED_MEMBERS} `) } });
  t.equal(upstream.requests.length, 1, 'the refused body never went upstream');
  t.match(await waitForLog(gw, refused.headers.get('x-switchyard-request-id')), { status: 400, error_code: 'invalid_request_body' });
  await eventually(() => (readdirSync(path.join(gw.dataDir, 'spool')).length === 0 ? true : undefined), 'no spool file left');
});
