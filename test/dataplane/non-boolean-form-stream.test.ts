import t from 'tap';
import { waitForLog } from './helpers/dataplane-scenarios.ts';
import { transcriptionRoute } from './helpers/transcription-route.ts';

// docs/data-plane.md step 3: a form's `stream` field other than `true` or `false` is refused
// before routing. The gateway reads only `true` as a stream, while a lax upstream (FastAPI's
// Form(bool)) streams on `1`, `True`, `yes` or `on`: no usage would be read, no tokens counted.

const BOUNDARY = 'StreamFieldBoundary';

/** A transcription form as the SDKs send one, its file first, with `stream` before the model. */
function form(stream: string): Buffer {
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="stream"\r\n\r\n${stream}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${BOUNDARY}--\r\n`,
  );
}

t.test('a transcription form whose stream field is not `true` or `false` is refused 400 before any upstream call; `true` and `false` pass', async (t) => {
  const { upstream, gw, post: postForm } = await transcriptionRoute(t, BOUNDARY, (req, res) => {
    if (String(req.body).includes('name="stream"\r\n\r\ntrue\r\n')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ type: 'transcript.text.done', text: 'ok', usage: { type: 'tokens', input_tokens: 3, output_tokens: 1, total_tokens: 4 } })}\n\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"text":"ok"}');
  });
  const post = (stream: string) => postForm(form(stream));
  for (const stream of ['1', 'True', 'yes', 'on', '']) {
    const res = await post(stream);
    t.equal(res.status, 400, `stream=${JSON.stringify(stream)}: refused`);
    t.match(await res.json(), { error: { type: 'invalid_request_error', code: 'invalid_request_body', message: /"stream"/ } }, `stream=${JSON.stringify(stream)}: naming the field`);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 400, error_code: 'invalid_request_body', attempt_count: 0 });
  }
  t.equal(upstream.requests.length, 0, 'none went upstream');
  for (const stream of ['true', 'false']) {
    const res = await post(stream);
    const text = await res.text();
    t.equal(res.status, 200, `stream=${stream}: forwarded`);
    t.match(text, /"text":"ok"/);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, error_code: null });
  }
  t.equal(upstream.requests.length, 2, 'both went upstream');
});
