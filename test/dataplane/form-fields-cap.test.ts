import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { COLLECTED_FIELDS_BYTES, COLLECTED_FIELDS_COUNT, MultipartModelScanner, SMALL_FIELD_BYTES } from '../../src/dataplane/body/multipart-model-scanner.ts';
import { startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';

// docs/data-plane.md: no form is held in memory whole. The scanner collects the small text
// fields before the model for routing; a form of very many of them must not be collected whole.

const BOUNDARY = 'CapBoundary';

function textPart(name: string, value: string): string {
  return `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
}

/** `count` text fields of `size` bytes, then the fields routing reads, the model and a file. */
function paddedForm(count: number, size: number, model: string): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(textPart(`pad${i}`, 'x'.repeat(size)));
  parts.push(textPart('stream', 'true'), textPart('response_format', 'verbose_json'), textPart('model', model));
  parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....\r\n--${BOUNDARY}--\r\n`);
  return Buffer.from(parts.join(''));
}

/** A transcription upstream answering `{"text":"ok"}`, the data plane in front of it, and a key for it; all stopped at the test's end. */
async function transcriptionRoute(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"text":"ok"}');
  });
  t.teardown(() => upstream.close());
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper-1', upstream: 'whisper-1' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  return { upstream, gw, keyValue };
}

/** A transcription of `form`, sent as the SDKs send a file upload. */
function postTranscription(gw: Gateway, keyValue: string, form: Buffer): Promise<Response> {
  return fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: form });
}

t.test('a form of 20,000 small fields before its model: the collected fields stay bounded, the routed ones kept', async (t) => {
  const body = paddedForm(20_000, 1000, 'whisper-1');
  const scanner = new MultipartModelScanner(BOUNDARY);
  for (let at = 0; at < body.length; at += 64 * 1024) scanner.push(body.subarray(at, at + 64 * 1024));
  const outcome = scanner.end();
  t.equal(outcome.model?.value, 'whisper-1', 'the model is found after them');
  const held = [...scanner.fields].reduce((sum, [name, value]) => sum + name.length + value.length, 0);
  // Besides the padding within the cap, at most the routing fields (nine, each a small field).
  t.ok(scanner.fields.size <= COLLECTED_FIELDS_COUNT + 9, `fields collected: ${scanner.fields.size}`);
  t.ok(held <= COLLECTED_FIELDS_BYTES + 9 * (SMALL_FIELD_BYTES + 32), `bytes collected: ${held}`);
  t.equal(scanner.fields.get('stream'), 'true', 'a field routing reads is collected after any padding');
  t.equal(scanner.fields.get('response_format'), 'verbose_json');
  t.equal(scanner.fields.get('pad0'), 'x'.repeat(1000), 'fields within the cap are still collected');
  t.notOk(scanner.fields.has('pad19999'), 'fields past the cap are not');
});

t.test('such a form is still served, and forwarded byte for byte', async (t) => {
  const { upstream, gw, keyValue } = await transcriptionRoute(t);
  const body = paddedForm(5_000, 1000, 'whisper-1');
  const res = await postTranscription(gw, keyValue, body);
  t.equal(res.status, 200);
  t.same(await res.json(), { text: 'ok' });
  t.equal(upstream.requests.length, 1);
  t.ok(upstream.requests[0]!.body.equals(body), 'the upstream got the form as sent');
  const record = await waitForLog(gw, res.headers.get('x-request-id'));
  t.equal(record.status, 200);
});

t.test('a spool directory that cannot be used at all (a plain file in its place) answers 503 spool_unavailable', async (t) => {
  const { upstream, gw, keyValue } = await transcriptionRoute(t);
  const spool = path.join(gw.dataDir, 'spool');
  rmSync(spool, { recursive: true, force: true });
  writeFileSync(spool, 'not a directory');
  const body = paddedForm(10, 10, 'whisper-1');
  const res = await postTranscription(gw, keyValue, body);
  t.equal(res.status, 503, 'the gateway cannot take the form: unavailable, not a bug (500)');
  t.match(await res.json(), { error: { code: 'spool_unavailable' } });
  t.equal(upstream.requests.length, 0, 'nothing was forwarded');
  const record = await waitForLog(gw, res.headers.get('x-request-id'));
  t.match(record, { status: 503, error_code: 'spool_unavailable' });
});
