import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import t, { type Test } from 'tap';
import type { OperationEntry } from '../../src/generated/index.ts';
import { prepareRequestBody } from '../../src/dataplane/prepare-request-body.ts';
import { checkRecorded, cutShortGateway, openUpload } from './helpers/cut-short-upload.ts';
import { recordOfKey, waitForLog } from './helpers/dataplane-scenarios.ts';

// A JSON body, and a passthrough body small enough to be read whole, cut short mid-upload
// (silent: 408, its client gone: 499, a chunked one past maxBodyBytes: 413) is recorded as far
// as it arrived, truncated, for a key that records bodies, as a form cut short is
// (docs/data-plane.md, step 10). Both were recorded with no body at all.

const BUFFERED = 16 * 1024;
const JSON_HEAD = '{"model":"m","messages":[{"role":"user","content":"';
const ROUTES = {
  json: { path: '/v1/chat/completions', channel: 'ch03', protocol: 'x-completions', model: 'm', contentType: 'application/json', head: JSON_HEAD },
  passthrough: { path: '/v1/responses/vendor-ext/upload', channel: 'ch09', protocol: 'x-responses', model: 'm', contentType: 'application/octet-stream', head: '' },
} as const;
type RouteName = keyof typeof ROUTES;
/** Read whole below bufferedJsonBytes, spooled (JSON) or streamed (passthrough) above it. */
const SIZES = { buffered: 4 * 1024, spooled: 4 * BUFFERED } as const;

async function gateway(t: Test, route: RouteName, maxBodyBytes?: number) {
  const { gw, recording, silent, upstreamRequests } = await cutShortGateway(t, ROUTES[route], { streamIdleTimeoutMs: 300, bufferedJsonBytes: BUFFERED, ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }) });
  return { gw, upstreamRequests, keys: [recording, silent] };
}

/** The first half of a body of `size` bytes (text, so the record is text too). */
function firstHalf(route: RouteName, size: number): Buffer {
  const head = ROUTES[route].head;
  return Buffer.from(head + 'a'.repeat(size / 2 - head.length));
}

for (const route of Object.keys(ROUTES) as RouteName[]) {
  for (const [kind, size] of Object.entries(SIZES)) {
    t.test(`a ${kind} ${route} body that goes silent: 408; one whose client leaves: 499; recorded truncated`, async (t) => {
      const { gw, keys, upstreamRequests } = await gateway(t, route);
      const sent = firstHalf(route, size);
      for (const key of keys) {
        const silent = openUpload(gw, ROUTES[route], key.value, { 'content-length': String(size) });
        silent.req.write(sent);
        const answered = await silent.answer;
        t.equal(answered.status, 408);
        silent.req.destroy();
        const timedOut = await waitForLog(gw, answered.requestId);
        t.match(timedOut, { error_code: 'request_timeout', client_aborted: false });
        checkRecorded(t, timedOut, key.records, sent, size);

        // The gateway sends its 100 Continue once it reads the body: what is written after it is
        // read as it arrives, before the client's close, which follows it once it has left.
        const leaving = openUpload(gw, ROUTES[route], key.value, { 'content-length': String(size), expect: '100-continue' });
        leaving.req.on('continue', () => leaving.req.write(sent, () => leaving.req.destroy()));
        t.equal((await leaving.answer).status, 0, 'no answer: the client left');
        const gone = await recordOfKey(gw, key.id, 499);
        t.match(gone, { error_code: 'client_closed', client_aborted: true });
        checkRecorded(t, gone, key.records, sent, size);
      }
      // A passthrough body past bufferedJsonBytes streams to the upstream as it comes.
      if (kind === 'buffered' || route === 'json') t.equal(upstreamRequests(), 0, 'no upstream call');
    });
  }
}

t.test('a chunked JSON body past maxBodyBytes: 413, recorded truncated, its size what arrived', async (t) => {
  const { gw, keys } = await gateway(t, 'json', 2 * BUFFERED);
  const sent = firstHalf('json', SIZES.spooled * 2);
  const { req, answer } = openUpload(gw, ROUTES.json, keys[0]!.value, { 'transfer-encoding': 'chunked' });
  req.write(sent);
  const answered = await answer;
  t.equal(answered.status, 413);
  req.destroy();
  const record = await waitForLog(gw, answered.requestId);
  t.match(record, { error_code: 'request_too_large' });
  const recorded = record.request_body as { original_bytes: number } | undefined;
  t.ok(recorded !== undefined && recorded.original_bytes > 2 * BUFFERED, 'its size is what arrived, past the limit');
  if (recorded !== undefined) checkRecorded(t, record, true, sent, recorded.original_bytes, false);
});

t.test('a passthrough body whose client leaves before its spool file is open is refused client_closed, and recorded truncated too', async (t) => {
  const spoolDir = mkdtempSync(path.join(tmpdir(), 'switchyard-cut-short-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const req = Object.assign(new PassThrough(), { method: 'POST', headers: { 'content-length': String(SIZES.spooled) } }) as unknown as IncomingMessage;
  const prepared = prepareRequestBody(req, { body: 'raw' } as OperationEntry, true, { maxBodyBytes: 1024 * 1024, bufferedJsonBytes: BUFFERED, spoolDir }, 60_000);
  // Gone at once: the spool file opens on the thread pool, after the stream's failure.
  req.destroy(new Error('aborted'));
  const body = await prepared;
  t.match(body, { refusal: { code: 'client_closed' }, cutShort: true });
  t.match(body.recorded(), { state: 'truncated', original_bytes: SIZES.spooled });
});

t.test('a chunked passthrough body past maxBodyBytes before its spool file is open is refused request_too_large, and recorded truncated too', async (t) => {
  const spoolDir = mkdtempSync(path.join(tmpdir(), 'switchyard-cut-short-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const upload = new PassThrough();
  const req = Object.assign(upload, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }) as unknown as IncomingMessage;
  const maxBodyBytes = 2 * BUFFERED;
  const prepared = prepareRequestBody(req, { body: 'raw' } as OperationEntry, true, { maxBodyBytes, bufferedJsonBytes: BUFFERED, spoolDir }, 60_000);
  // Past the limit at once: the spool file opens on the thread pool, after the stream's failure.
  const sent = Buffer.from('a'.repeat(3 * BUFFERED));
  upload.write(sent.subarray(0, BUFFERED / 2));
  upload.write(sent.subarray(BUFFERED / 2));
  const body = await prepared;
  t.match(body, { refusal: { code: 'request_too_large' }, cutShort: true });
  const recorded = body.recorded();
  t.match(recorded, { state: 'truncated' });
  t.ok(recorded !== undefined && recorded.original_bytes > maxBodyBytes, 'its size is what arrived, past the limit');
  const text = recorded?.body;
  t.ok(typeof text === 'string' && text.length > 0 && sent.toString('utf8').startsWith(text), 'what arrived within the limit, as sent');
});
