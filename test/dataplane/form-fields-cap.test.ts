import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { COLLECTED_FIELDS_BYTES, COLLECTED_FIELDS_COUNT, MultipartModelScanner, SMALL_FIELD_BYTES } from '../../src/dataplane/body/multipart-model-scanner.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';
import { transcriptionRoute } from './helpers/transcription-route.ts';

// docs/data-plane.md: no form is held in memory whole. The scanner collects the small text
// fields up to the first attempt (before the model, and after it up to the next file part) for
// routing; a form of very many of them must not be collected whole.

const BOUNDARY = 'CapBoundary';

function textPart(name: string, value: string): string {
  return `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
}

/** `count` text fields of `size` bytes, then the fields routing reads, the model and a file; or the model first. */
function paddedForm(count: number, size: number, model: string, modelFirst = false): Buffer {
  const parts: string[] = modelFirst ? [textPart('model', model)] : [];
  for (let i = 0; i < count; i++) parts.push(textPart(`pad${i}`, 'x'.repeat(size)));
  parts.push(textPart('stream', 'true'), textPart('response_format', 'verbose_json'));
  if (!modelFirst) parts.push(textPart('model', model));
  parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....\r\n--${BOUNDARY}--\r\n`);
  return Buffer.from(parts.join(''));
}

for (const [where, modelFirst] of [['before', false], ['after', true]] as const) t.test(`a form of 20,000 small fields ${where} its model: the collected fields stay bounded, the routed ones kept`, async (t) => {
  const body = paddedForm(20_000, 1000, 'whisper-1', modelFirst);
  const scanner = new MultipartModelScanner(BOUNDARY);
  for (let at = 0; at < body.length; at += 64 * 1024) scanner.push(body.subarray(at, at + 64 * 1024));
  const outcome = scanner.end();
  t.equal(outcome.model?.value, 'whisper-1', 'the model is found');
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
  const { upstream, gw, post } = await transcriptionRoute(t, BOUNDARY);
  const body = paddedForm(5_000, 1000, 'whisper-1');
  const res = await post(body);
  t.equal(res.status, 200);
  t.same(await res.json(), { text: 'ok' });
  t.equal(upstream.requests.length, 1);
  t.ok(upstream.requests[0]!.body.equals(body), 'the upstream got the form as sent');
  const record = await waitForLog(gw, res.headers.get('x-request-id'));
  t.equal(record.status, 200);
});

t.test('a spool directory that cannot be used at all (a plain file in its place) answers 503 spool_unavailable', async (t) => {
  const { upstream, gw, post } = await transcriptionRoute(t, BOUNDARY);
  const spool = path.join(gw.dataDir, 'spool');
  rmSync(spool, { recursive: true, force: true });
  writeFileSync(spool, 'not a directory');
  const body = paddedForm(10, 10, 'whisper-1');
  const res = await post(body);
  t.equal(res.status, 503, 'the gateway cannot take the form: unavailable, not a bug (500)');
  t.match(await res.json(), { error: { code: 'spool_unavailable' } });
  t.equal(upstream.requests.length, 0, 'nothing was forwarded');
  const record = await waitForLog(gw, res.headers.get('x-request-id'));
  t.match(record, { status: 503, error_code: 'spool_unavailable' });
});
