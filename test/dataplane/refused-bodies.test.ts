import t, { type Test } from 'tap';
import { MODEL_FIELD_BYTES } from '../../src/dataplane/body/index.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// docs/data-plane.md step 10: a streamed body is recorded by its first MiB, marked truncated.
const MIB = 1024 * 1024;
// Past the default bufferedJsonBytes (1 MiB): these bodies are spooled, not parsed whole.
const PAD = 'x'.repeat(1_200_000);

const ok = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"x","choices":[]}');
};

async function chatGateway(t: Test, recordBody = true) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions', 'x-generate', 'x-suite'], recordBody });
  const post = (path: string, body: string, contentType = 'application/json') => fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': contentType }, body });
  return { upstream, gw, post, keyValue };
}

t.test('a spooled body refused while it is read is recorded by its first MiB, marked truncated', async (t) => {
  const { upstream, gw, post } = await chatGateway(t);
  // Found malformed at its end, and (an array, not an object) at its first byte.
  const cases = [
    { body: `{"pad":"${PAD}","model":`, code: 'invalid_json' },
    { body: `["${PAD}"]`, code: 'invalid_request_body' },
  ];
  for (const { body, code } of cases) {
    const res = await post('/v1/chat/completions', body);
    t.equal(res.status, 400);
    t.match(await res.json(), { error: { code } });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { error_code: code, attempt_count: 0, request_body: { state: 'truncated', original_bytes: Buffer.byteLength(body) } });
    t.equal(record.request_body?.body, body.slice(0, MIB), `${code}: the body's first MiB`);
  }
  t.equal(upstream.requests.length, 0);
});

t.test('a form with broken framing is refused and recorded as sent', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'stt', upstream: 'vendor-whisper' }], protocols: ['x-suite'], recordBody: true });
  const form = '--xx\r\nGarbage\r\n\r\nstt\r\n--xx--\r\n';
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'multipart/form-data; boundary=xx' }, body: form });
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { code: 'invalid_request_body' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record.request_body, { state: 'recorded', original_bytes: form.length, body: form });
  t.equal(upstream.requests.length, 0);
});

t.test('JSON nested 200 deep gets the same verdict whether it is parsed whole or spooled', async (t) => {
  const { upstream, post } = await chatGateway(t, false);
  const nest = '['.repeat(200) + ']'.repeat(200);
  const small = `{"model":"chat","x":${nest}}`;
  const large = `{"model":"chat","pad":"${PAD}","x":${nest}}`;
  for (const body of [small, large]) {
    const res = await post('/v1/chat/completions', body);
    t.equal(res.status, 200, `${body.length} bytes forwarded`);
    await res.arrayBuffer();
  }
  t.equal(upstream.requests.length, 2);
  t.ok(upstream.requests[1]!.body.toString().endsWith(`"x":${nest}}`), 'the spooled one arrives with its nesting');
  // Still checked: a mismatched bracket deep down is refused.
  const broken = await post('/v1/chat/completions', `{"model":"chat","pad":"${PAD}","x":${'['.repeat(200)}}}`);
  t.equal(broken.status, 400);
  t.match(await broken.json(), { error: { code: 'invalid_json' } });
});

t.test('a model longer than the cap is refused 400 before routing, in a buffered or spooled body or the path, and neither quoted nor logged whole', async (t) => {
  const { upstream, gw, post, keyValue } = await chatGateway(t);
  const longModel = 'm'.repeat(2048);
  // Each refused with the code of where the model was named: the body's, or the path parameter's.
  const requests = [
    { code: 'invalid_request_body', send: () => post('/v1/chat/completions', JSON.stringify({ model: longModel, messages: [] })) },
    { code: 'invalid_request_body', send: () => post('/v1/chat/completions', JSON.stringify({ pad: PAD, model: longModel })) },
    { code: 'invalid_path_parameter', send: () => fetch(`${gw.url}/v1beta/models/${longModel}:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: '{"contents":[]}' }) },
  ];
  for (const { code, send } of requests) {
    const res = await send();
    t.equal(res.status, 400);
    const text = await res.text();
    t.equal(JSON.stringify(JSON.parse(text)).includes(code), true, text.slice(0, 200));
    t.notOk(text.includes('m'.repeat(MODEL_FIELD_BYTES + 1)), 'the answer does not quote the value past the cap');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 400, error_code: code, attempt_count: 0 });
    t.ok((record.external_model ?? '').length <= MODEL_FIELD_BYTES, 'the record keeps no model past the cap');
  }
  // A name of exactly the cap is a name: routed (and refused as unknown), not refused as too long.
  const atCap = await post('/v1/chat/completions', JSON.stringify({ model: 'é'.repeat(MODEL_FIELD_BYTES / 2) }));
  t.match(await atCap.json(), { error: { code: 'model_not_visible' } });
  t.equal(upstream.requests.length, 0, 'no upstream call');
});
