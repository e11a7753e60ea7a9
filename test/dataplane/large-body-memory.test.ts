import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { REPO_ROOT } from '../helpers/repo-copy.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { startLoopbackServer } from './helpers/loopback-server.ts';

// Issue 4 item 2: request and response bodies stream through without the gateway holding a
// whole large body. The real server runs as its own process (helpers/large-body-server.ts) so
// that its peak memory (VmHWM) is its own: a 300 MiB form, a 300 MiB JSON body (spooled) and a
// 400 MiB speech answer read by a slower client must each leave it well below their size over
// what it held before. A memory bound, not a timing one.

const MiB = 1024 * 1024;
const UPLOAD = 300 * MiB;
const DOWNLOAD = 400 * MiB;
/** Well below any of the bodies: one held whole would pass it. */
const BOUND = 150 * MiB;
const BOUNDARY = 'largeBodyForm';

/** `total` bytes: `head`, filler, `tail`, made as they are sent. */
function generated(head: string, tail: string, total: number): Readable {
  const filler = Buffer.alloc(256 * 1024, 'a');
  let left = total - head.length - tail.length;
  return Readable.from(
    (function* () {
      yield Buffer.from(head);
      while (left > 0) {
        const n = Math.min(left, filler.length);
        left -= n;
        yield filler.subarray(0, n);
      }
      yield Buffer.from(tail);
    })(),
  );
}

function peakMemory(pid: number): number {
  const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (kib === null) throw new Error('no VmHWM');
  return Number(kib[1]) * 1024;
}

t.test('a 300 MiB form, a 300 MiB JSON body and a 400 MiB answer read slowly pass without the gateway holding them', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const received: Record<string, { bytes: number; head: string }> = {};
  // Counts what it receives rather than keeping it: the test's own process holds no body either.
  const upstream = await startLoopbackServer((req, res) => {
    let bytes = 0;
    let head = '';
    req.on('data', (chunk: Buffer) => {
      if (head.length < 200) head += chunk.subarray(0, 200).toString('latin1');
      bytes += chunk.length;
    });
    // Answered once the body has all come, so the gateway sends all of it first.
    req.on('end', async () => {
      received[req.url ?? ''] = { bytes, head };
      if (req.url?.startsWith('/v1/audio/speech')) {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(DOWNLOAD) });
        for await (const chunk of generated('', '', DOWNLOAD)) if (!res.write(chunk)) await once(res, 'drain');
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"ok"}');
    });
  });
  t.teardown(() => upstream.close());

  const child = spawn(process.execPath, ['--import=tsx', path.join(REPO_ROOT, 'test/dataplane/helpers/large-body-server.ts'), upstream.url], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const { port, key, dataDir } = JSON.parse(line.toString()) as { port: number; key: string; dataDir: string };

  const post = (urlPath: string, contentType: string, body: Readable | Buffer, read = (res: IncomingMessage): void => void res.resume()) =>
    new Promise<{ status: number; bytes: number }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: urlPath, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType, ...(Buffer.isBuffer(body) ? {} : { 'content-length': String(UPLOAD) }) } });
      req.on('error', reject);
      req.on('response', (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', reject);
        read(res);
      });
      if (Buffer.isBuffer(body)) req.end(body);
      else body.pipe(req);
    });

  // The first request loads what every request uses; the bound is on what a large body adds.
  t.equal((await post('/v1/audio/transcriptions', `multipart/form-data; boundary=${BOUNDARY}`, Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper\r\n--${BOUNDARY}--\r\n`))).status, 200);
  const before = peakMemory(child.pid!);

  const form = generated(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`, `\r\n--${BOUNDARY}--\r\n`, UPLOAD);
  t.equal((await post('/v1/audio/transcriptions', `multipart/form-data; boundary=${BOUNDARY}`, form)).status, 200, 'the form');
  t.equal(received['/v1/audio/transcriptions']?.bytes, UPLOAD + 'vendor-'.length, 'all of it reached the upstream, its model mapped');
  t.match(received['/v1/audio/transcriptions']?.head, 'vendor-whisper');

  const json = generated('{"model":"ocr","document":{"type":"document_url","document_url":"data:application/pdf;base64,', '"}}', UPLOAD);
  t.equal((await post('/v1/ocr', 'application/json', json)).status, 200, 'the JSON body');
  t.equal(received['/v1/ocr']?.bytes, UPLOAD + 'vendor-'.length, 'all of it reached the upstream, its model mapped');

  // A slower reader: one chunk a turn of the loop, so the upstream outruns it and the gateway must hold back.
  const slowly = (res: IncomingMessage): void => {
    res.on('data', () => {
      res.pause();
      setImmediate(() => res.resume());
    });
  };
  const speech = await post('/v1/audio/speech', 'application/json', Buffer.from('{"model":"tts","input":"hi","voice":"alloy"}'), slowly);
  t.same(speech, { status: 200, bytes: DOWNLOAD }, 'the whole answer');

  const added = peakMemory(child.pid!) - before;
  t.ok(added < BOUND, `peak memory grew ${Math.round(added / MiB)} MiB, under ${BOUND / MiB} MiB`);
  // Removed as each request ends, which may come just after its answer.
  await eventually(() => (readdirSync(path.join(dataDir, 'spool')).length === 0 ? true : undefined), 'no spool file left');
});
