import t from 'tap';
import { checkRecorded, cutShortGateway, openUpload, type UploadRoute } from './helpers/cut-short-upload.ts';
import { recordOfKey, waitForLog } from './helpers/dataplane-scenarios.ts';

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

const TRANSCRIPTION: UploadRoute = { path: '/v1/audio/transcriptions', contentType: `multipart/form-data; boundary=${BOUNDARY}`, channel: 'ch03', protocol: 'x-suite', model: 'whisper' };

t.test('a file-first form that goes silent: 408, recorded truncated; nothing for a key that does not record', async (t) => {
  const { gw, recording, silent, upstreamRequests } = await cutShortGateway(t, TRANSCRIPTION, { streamIdleTimeoutMs: 300 });
  for (const key of [recording, silent]) {
    const { req, answer } = openUpload(gw, TRANSCRIPTION, key.value, { 'content-length': String(DECLARED) });
    req.write(SENT);
    const answered = await answer;
    t.equal(answered.status, 408);
    req.destroy();
    const record = await waitForLog(gw, answered.requestId);
    t.match(record, { error_code: 'request_timeout', client_aborted: false, attempt_count: 0 });
    checkRecorded(t, record, key.records, SENT, DECLARED);
  }
  t.equal(upstreamRequests(), 0, 'the model field never came: no upstream call');
});

t.test('a file-first form whose client leaves mid-upload: 499, recorded truncated; nothing for a key that does not record', async (t) => {
  const { gw, recording, silent } = await cutShortGateway(t, TRANSCRIPTION, {});
  for (const key of [recording, silent]) {
    const { req, answer } = openUpload(gw, TRANSCRIPTION, key.value, { 'content-length': String(DECLARED) });
    // Cut once what was written has left for the gateway.
    req.write(SENT, () => req.destroy());
    t.equal((await answer).status, 0, 'no answer: the client left');
    const record = await recordOfKey(gw, key.id, 499);
    t.match(record, { error_code: 'client_closed', client_aborted: true });
    checkRecorded(t, record, key.records, SENT, DECLARED);
  }
});

t.test('a chunked file-first form past maxBodyBytes: 413, recorded truncated, its size what arrived', async (t) => {
  const { gw, recording } = await cutShortGateway(t, TRANSCRIPTION, { maxBodyBytes: 32 * 1024 });
  const { req, answer } = openUpload(gw, TRANSCRIPTION, recording.value, { 'transfer-encoding': 'chunked' });
  req.write(SENT);
  const answered = await answer;
  t.equal(answered.status, 413);
  req.destroy();
  const record = await waitForLog(gw, answered.requestId);
  t.match(record, { error_code: 'request_too_large' });
  const recorded = record.request_body as { original_bytes: number } | undefined;
  t.ok(recorded !== undefined && recorded.original_bytes > 32 * 1024, 'its size is what arrived, past the limit');
  if (recorded !== undefined) checkRecorded(t, record, true, SENT, recorded.original_bytes, false);
});

t.test('a file-first form that goes silent after its key changed: still 408, and recorded only if the key still records', async (t) => {
  // Long enough for the store write below to land before the body is found silent.
  const { gw, recording } = await cutShortGateway(t, TRANSCRIPTION, { streamIdleTimeoutMs: 1000 });
  for (const change of [{ record_request_body: false }, { enabled: false }]) {
    const { req, answer } = openUpload(gw, TRANSCRIPTION, recording.value, { 'content-length': String(DECLARED) });
    await new Promise<void>((resolve) => req.write(SENT, () => resolve()));
    await gw.store.accessKeys.update(recording.id, change);
    const answered = await answer;
    t.equal(answered.status, 408, `${Object.keys(change)[0]}: the body's failure stands, not the key's checks`);
    req.destroy();
    const record = await waitForLog(gw, answered.requestId);
    t.match(record, { error_code: 'request_timeout' });
    checkRecorded(t, record, change.enabled === false, SENT, DECLARED);
    await gw.store.accessKeys.update(recording.id, { enabled: true, record_request_body: true });
  }
});
