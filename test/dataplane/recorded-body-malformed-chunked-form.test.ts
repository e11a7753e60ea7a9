import t from 'tap';
import { cutShortGateway, openUpload, type UploadRoute } from './helpers/cut-short-upload.ts';
import { recordOfKey, waitForLog } from './helpers/dataplane-scenarios.ts';

// A chunked form found malformed at its start is still read on to its end or its first MiB
// before the answer, as a spooled JSON body is (docs/data-plane.md, step 10): its record holds
// the body whole when it is short, and says `truncated` when only part of it was kept, never
// `recorded` for the few bytes that had arrived when the form was refused.

const BOUNDARY = 'malformedForm';
const MIB = 1024 * 1024;
/** A part with no form-data name: refused as soon as its head is read. */
const BROKEN_HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nxx\r\n`);
const part = (name: string, value: string) => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
const REST = Buffer.concat([part('model', 'whisper'), part('prompt', 'p'.repeat(4000)), Buffer.from(`--${BOUNDARY}--\r\n`)]);
const TRANSCRIPTION: UploadRoute = { path: '/v1/audio/transcriptions', contentType: `multipart/form-data; boundary=${BOUNDARY}`, channel: 'ch03', protocol: 'x-suite', model: 'whisper' };
/** Only orders the writes: the rest goes once the gateway answered the head, or did not in this time. */
const HEAD_GAP_MS = 200;

const answeredOrPause = (answer: Promise<unknown>) => Promise.race([answer, new Promise((resolve) => setTimeout(resolve, HEAD_GAP_MS))]);

t.test('a chunked form refused at its first part, whose rest comes after: recorded whole', async (t) => {
  const { gw, recording, upstreamRequests } = await cutShortGateway(t, TRANSCRIPTION, {});
  const { req, answer } = openUpload(gw, TRANSCRIPTION, recording.value, { 'transfer-encoding': 'chunked' });
  req.write(BROKEN_HEAD);
  await answeredOrPause(answer);
  req.end(REST);
  const answered = await answer;
  t.equal(answered.status, 400);
  const record = await waitForLog(gw, answered.requestId);
  const form = Buffer.concat([BROKEN_HEAD, REST]);
  t.match(record, { error_code: 'invalid_request_body', request_body: { state: 'recorded', original_bytes: form.length } });
  t.equal(record.request_body?.body, form.toString('utf8'), 'the whole form as sent');
  t.equal(upstreamRequests(), 0);
});

t.test('a chunked form refused at its first part, longer than a MiB: recorded truncated, its first MiB', async (t) => {
  const { gw, recording } = await cutShortGateway(t, TRANSCRIPTION, {});
  const { req, answer } = openUpload(gw, TRANSCRIPTION, recording.value, { 'transfer-encoding': 'chunked' });
  req.write(BROKEN_HEAD);
  await answeredOrPause(answer);
  const filler = part('prompt', 'q'.repeat(MIB + 64 * 1024));
  req.end(Buffer.concat([filler, REST]));
  const answered = await answer;
  t.equal(answered.status, 400);
  const record = await waitForLog(gw, answered.requestId);
  const recorded = record.request_body;
  t.equal(recorded?.state, 'truncated');
  t.equal(recorded?.body, Buffer.concat([BROKEN_HEAD, filler]).subarray(0, MIB).toString('utf8'), 'its first MiB as sent');
  t.ok(recorded !== undefined && recorded.original_bytes > MIB, 'its size is what arrived, past the MiB');
});

t.test('a chunked form refused at its first part, whose client then leaves: recorded truncated', async (t) => {
  const { gw, recording } = await cutShortGateway(t, TRANSCRIPTION, {});
  const { req, answer } = openUpload(gw, TRANSCRIPTION, recording.value, { 'transfer-encoding': 'chunked' });
  req.write(BROKEN_HEAD);
  await answeredOrPause(answer);
  req.write(REST.subarray(0, 100), () => req.destroy());
  await answer;
  const record = await recordOfKey(gw, recording.id, 400);
  t.match(record, { error_code: 'invalid_request_body', request_body: { state: 'truncated' } });
  t.ok(String(record.request_body?.body).startsWith(BROKEN_HEAD.toString('utf8')), 'the start of the form as sent');
});
