import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import t, { type Test } from 'tap';
import type { DataPlaneOptions } from '../../src/dataplane/data-plane-deps.ts';
import type { LogRecord } from '../../src/store/logs/index.ts';
import { startUpstream, startDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, recordOfKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A form cut short mid-upload (silent: 408, its client gone: 499, a chunked one past
// maxBodyBytes: 413) is recorded as far as it arrived, truncated, for a key that records
// bodies (docs/data-plane.md, step 10), also when its file comes before the model field, the
// order the official SDKs send: the gateway is then still waiting for the model when it fails.

const BOUNDARY = 'cutShortForm';
const FILE_HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
const MODEL_TAIL = Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper\r\n--${BOUNDARY}--\r\n`);
/** Sent before the client stops: the file's head and part of its bytes (text, so the record is too). */
const SENT = Buffer.concat([FILE_HEAD, Buffer.alloc(64 * 1024, 'a')]);
/** The declared form: the rest of the file and the model field never come. */
const DECLARED = SENT.length + 64 * 1024 + MODEL_TAIL.length;

async function gateway(t: Test, options: Partial<DataPlaneOptions>): Promise<{ gw: Gateway; recording: { id: number; value: string }; silent: { id: number; value: string }; upstreamRequests: () => number }> {
  const upstream = await startUpstream((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"hi"}'));
  const gw = await startDataPlane(options);
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper', upstream: 'vendor-whisper' }], secrets: ['sk-a'] });
  const recording = await createKey(gw.store, { name: 'recording', protocols: ['x-suite'], record_request_body: true });
  const silent = await createKey(gw.store, { name: 'silent', protocols: ['x-suite'], record_request_body: false });
  return { gw, recording: { id: recording.key.id, value: recording.keyValue }, silent: { id: silent.key.id, value: silent.keyValue }, upstreamRequests: () => upstream.requests.length };
}

interface Answer {
  /** 0 when there is none. */
  status: number;
  requestId?: string;
}

/** A transcription upload whose body the test writes by hand; `answer` settles when the gateway answers, or the request fails. */
function openUpload(gw: Gateway, keyValue: string, framing: Record<string, string>): { req: ClientRequest; answer: Promise<Answer> } {
  const u = new URL(gw.url);
  const req = request({ host: u.hostname, port: u.port, path: '/v1/audio/transcriptions', method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...framing } });
  const answer = new Promise<Answer>((resolve) => {
    req.on('response', (res: IncomingMessage) => {
      const answered = { status: res.statusCode ?? 0, requestId: res.headers['x-switchyard-request-id'] as string | undefined };
      res.resume();
      res.on('end', () => resolve(answered));
      res.on('error', () => resolve(answered));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
  return { req, answer };
}

/** `someArrived`: the gateway read part of the form before it failed (a chunk past the limit is not kept). */
function checkTruncated(t: Test, record: LogRecord, originalBytes: number, someArrived = true): void {
  const recorded = record.request_body as { state: string; original_bytes: number; body: string; encoding?: string } | undefined;
  t.match(recorded, { state: 'truncated', original_bytes: originalBytes }, 'recorded truncated, its size the declared length (or with none what arrived)');
  t.equal(recorded?.encoding, undefined, 'as text');
  t.ok(recorded !== undefined && SENT.toString('utf8').startsWith(recorded.body), 'the start of the form as sent');
  if (someArrived) t.ok(recorded !== undefined && recorded.body.length > 0, 'what arrived is kept');
}

t.test('a file-first form that goes silent: 408, recorded truncated; nothing for a key that does not record', async (t) => {
  const { gw, recording, silent, upstreamRequests } = await gateway(t, { streamIdleTimeoutMs: 300 });
  for (const key of [recording, silent]) {
    const { req, answer } = openUpload(gw, key.value, { 'content-length': String(DECLARED) });
    req.write(SENT);
    const answered = await answer;
    t.equal(answered.status, 408);
    req.destroy();
    const record = await waitForLog(gw, answered.requestId);
    t.match(record, { error_code: 'request_timeout', client_aborted: false, attempt_count: 0 });
    if (key === recording) checkTruncated(t, record, DECLARED);
    else t.notOk('request_body' in record, 'no body for a key that does not record');
  }
  t.equal(upstreamRequests(), 0, 'the model field never came: no upstream call');
});

t.test('a file-first form whose client leaves mid-upload: 499, recorded truncated; nothing for a key that does not record', async (t) => {
  const { gw, recording, silent } = await gateway(t, {});
  for (const key of [recording, silent]) {
    const { req, answer } = openUpload(gw, key.value, { 'content-length': String(DECLARED) });
    // Cut once what was written has left for the gateway.
    req.write(SENT, () => req.destroy());
    t.equal((await answer).status, 0, 'no answer: the client left');
    const record = await recordOfKey(gw, key.id, 499);
    t.match(record, { error_code: 'client_closed', client_aborted: true });
    if (key === recording) checkTruncated(t, record, DECLARED);
    else t.notOk('request_body' in record, 'no body for a key that does not record');
  }
});

t.test('a chunked file-first form past maxBodyBytes: 413, recorded truncated, its size what arrived', async (t) => {
  const { gw, recording } = await gateway(t, { maxBodyBytes: 32 * 1024 });
  const { req, answer } = openUpload(gw, recording.value, { 'transfer-encoding': 'chunked' });
  req.write(SENT);
  const answered = await answer;
  t.equal(answered.status, 413);
  req.destroy();
  const record = await waitForLog(gw, answered.requestId);
  t.match(record, { error_code: 'request_too_large' });
  const recorded = record.request_body as { original_bytes: number } | undefined;
  t.ok(recorded !== undefined && recorded.original_bytes > 32 * 1024, 'its size is what arrived, past the limit');
  if (recorded !== undefined) checkTruncated(t, record, recorded.original_bytes, false);
});

t.test('a file-first form that goes silent after its key changed: still 408, and recorded only if the key still records', async (t) => {
  // Long enough for the store write below to land before the body is found silent.
  const { gw, recording } = await gateway(t, { streamIdleTimeoutMs: 1000 });
  for (const change of [{ record_request_body: false }, { enabled: false }]) {
    const { req, answer } = openUpload(gw, recording.value, { 'content-length': String(DECLARED) });
    await new Promise<void>((resolve) => req.write(SENT, () => resolve()));
    await gw.store.accessKeys.update(recording.id, change);
    const answered = await answer;
    t.equal(answered.status, 408, `${Object.keys(change)[0]}: the body's failure stands, not the key's checks`);
    req.destroy();
    const record = await waitForLog(gw, answered.requestId);
    t.match(record, { error_code: 'request_timeout' });
    if (change.enabled === false) checkTruncated(t, record, DECLARED);
    else t.notOk('request_body' in record, 'no body: the key no longer records');
    await gw.store.accessKeys.update(recording.id, { enabled: true, record_request_body: true });
  }
});
