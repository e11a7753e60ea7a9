import t, { type Test } from 'tap';
import { startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { createKey, eventually, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';

// docs/data-plane.md step 3: a body the gateway and a lenient upstream parser (Starlette's
// python-multipart, Werkzeug) could read with different models is refused before any upstream
// call. A key limited to `wallowed` must never get `wforbidden` run, whatever it sends.

const B = 'B';
const FILE = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFFxxxxWAVE\r\n`;
const model = (value: string, disposition = 'form-data; name="model"') => `--${B}\r\nContent-Disposition: ${disposition}\r\n\r\n${value}\r\n`;

async function setUp(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"text":"ok","choices":[]}');
  });
  t.teardown(() => upstream.close());
  const gw = await gateway(t);
  const models = [
    { external: 'wallowed', upstream: 'up-wallowed' },
    { external: 'wforbidden', upstream: 'up-wforbidden' },
  ];
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models, secrets: ['sk-a'] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models, secrets: ['sk-b'] });
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-suite', 'x-completions'], models: ['wallowed'] });
  return { upstream, gw, keyId: key.id, keyValue };
}

function post(gw: Gateway, keyValue: string, path: string, contentType: string, body: Buffer | string | ReadableStream<Uint8Array> | FormData): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${keyValue}` };
  if (!(body instanceof FormData)) headers['content-type'] = contentType;
  return fetch(`${gw.url}${path}`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
}

/** 400 `code`, nothing sent upstream, and one log record of it. */
async function refused(t: Test, setup: Awaited<ReturnType<typeof setUp>>, res: Response, code: string, label: string) {
  t.equal(res.status, 400, `${label}: 400`);
  t.match(await res.json(), { error: { code } }, `${label}: ${code}`);
  const record = await waitForLog(setup.gw, res.headers.get('x-request-id'));
  t.match(record, { status: 400, error_code: code, attempt_count: 0 }, `${label}: recorded, no attempt`);
  t.equal(setup.upstream.requests.length, 0, `${label}: no upstream call`);
  const records = await eventually(async () => {
    await setup.gw.logs.flush();
    return (await setup.gw.logs.list({ access_key_id: setup.keyId }, { limit: 10 })).items;
  }, 'the log records');
  t.equal(records.length, 1, `${label}: one log record`);
}

const FORMS: Array<[string, string]> = [
  ['padding before the close, a second model after it', `${FILE}${model('wallowed')}--${B} --\r\n\r\n${model('wforbidden')}--${B}--\r\n`],
  ['a tab before the close, a second model after it', `${FILE}${model('wallowed')}--${B}\t--\r\n\r\n${model('wforbidden')}--${B}--\r\n`],
  ['a second model after the close', `${FILE}${model('wallowed')}--${B}--\r\n${model('wforbidden')}--${B}--\r\n`],
  ["a model part with filename* (Starlette's text field)", `${model('wallowed')}${FILE}${model('wforbidden', "form-data; name=\"model\"; filename*=UTF-8''x")}--${B}--\r\n`],
  ['a model part with "filename =" (Werkzeug\'s text field)', `${model('wforbidden', 'form-data; name="model"; filename ="x"')}${FILE}${model('wallowed')}--${B}--\r\n`],
  ['a model part with filename=""', `${model('wforbidden', 'form-data; name="model"; filename=""')}${FILE}${model('wallowed')}--${B}--\r\n`],
  ['a model part with FileName', `${model('wallowed')}${model('wforbidden', 'form-data; name="model"; FileName="x"')}${FILE}--${B}--\r\n`],
  ['a model part with filename*0', `${model('wallowed')}${model('wforbidden', 'form-data; name="model"; filename*0="x"')}${FILE}--${B}--\r\n`],
  ["a part named by name* (Werkzeug's model)", `${model('wallowed')}${FILE}${model('wforbidden', "form-data; name=\"x\"; name*=UTF-8''model")}--${B}--\r\n`],
  ["a model Content-Disposition after a bare LF in a part's headers (Werkzeug's)", `--${B}\r\nX-Pad: a\nContent-Disposition: form-data; name="model"\r\nContent-Disposition: form-data; name="x"\r\n\r\nwforbidden\r\n${FILE}${model('wallowed')}--${B}--\r\n`],
  ["a model part after a bare LF in a file (Werkzeug's delimiter)", `${FILE.slice(0, -2)}\n${model('wforbidden')}${model('wallowed')}--${B}--\r\n`],
  // The forms are sent as Latin-1: each character below is one byte.
  ['a name with an overlong "m" (a decoder that takes overlong forms reads model)', `${model('wallowed')}${FILE}${model('wforbidden', 'form-data; name="\xc1\xadodel"')}--${B}--\r\n`],
  ['an unquoted name ending in Latin-1 NBSP (Starlette strips it)', `${FILE}${model('wforbidden', 'form-data; name=model\xa0')}${model('wallowed')}--${B}--\r\n`],
  ["a Latin-1 NBSP before a second name (Starlette's name)", `${model('wallowed')}${FILE}${model('wforbidden', 'form-data; name="x"; \xa0name="model"')}--${B}--\r\n`],
  ["a \\x1c before a second name (Starlette's name: Python's strip takes it for space)", `${model('wallowed')}${FILE}${model('wforbidden', 'form-data; name="x"; \x1cname="model"')}--${B}--\r\n`],
  ["a UTF-8 NEL before a second name (Werkzeug's name: Python's \\s matches it)", `${model('wallowed')}${FILE}${model('wforbidden', 'form-data; name="x"; \xc2\x85name="model"')}--${B}--\r\n`],
];

t.test('forms that a lenient parser reads with another model: 400 invalid_request_body, no upstream call, one record', async (t) => {
  for (const [label, form] of FORMS) {
    await t.test(label, async (t) => {
      const setup = await setUp(t);
      const res = await post(setup.gw, setup.keyValue, '/v1/audio/transcriptions', `multipart/form-data; boundary=${B}`, Buffer.from(form, 'latin1'));
      await refused(t, setup, res, 'invalid_request_body', label);
    });
  }
});

t.test('forms real clients send still pass: undici FormData (file first), and the close with CRLF or nothing after it', async (t) => {
  const setup = await setUp(t);
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('RIFF\r\n--\r\nWAVE')], { type: 'audio/wav' }), 'a.wav');
  form.append('model', 'wallowed');
  form.append('response_format', 'json');
  const res = await post(setup.gw, setup.keyValue, '/v1/audio/transcriptions', '', form);
  t.equal(res.status, 200, 'undici FormData');
  await res.arrayBuffer();
  t.match(setup.upstream.requests[0]!.body.toString('latin1'), /name="model"\r\n\r\nup-wallowed\r\n/, 'the upstream gets the mapped model');
  for (const [label, end] of [['CRLF', '\r\n'], ['nothing', '']]) {
    const res = await post(setup.gw, setup.keyValue, '/v1/audio/transcriptions', `multipart/form-data; boundary=${B}`, `${FILE}${model('wallowed')}--${B}--${end}`);
    t.equal(res.status, 200, `${label} after the close`);
    await res.arrayBuffer();
  }
  t.equal(setup.upstream.requests.length, 3);
});

t.test('a Latin-1 file name on a file part passes byte-exact; a byte that is not UTF-8 in a model part or outside a quoted value is refused', async (t) => {
  // curl on Windows, Java's HttpMime and legacy-charset pages send file names in the local charset.
  const latin1File = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="caf\xe9 \x85.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFFxxxxWAVE\r\n`;
  const setup = await setUp(t);
  const form = Buffer.from(`${latin1File}${model('wallowed')}--${B}--\r\n`, 'latin1');
  const res = await post(setup.gw, setup.keyValue, '/v1/audio/transcriptions', `multipart/form-data; boundary=${B}`, form);
  t.equal(res.status, 200, 'passes');
  await res.arrayBuffer();
  t.ok(setup.upstream.requests[0]?.body.equals(Buffer.from(form.toString('latin1').replace('wallowed', 'up-wallowed'), 'latin1')), 'forwarded as sent but the model');
  const refusedForms: Array<[string, string]> = [
    ["in a model part's other parameter", `${FILE}${model('wallowed', 'form-data; name="model"; note="caf\xe9"')}--${B}--\r\n`],
    ["in a model part's other header", `${FILE}--${B}\r\nContent-Disposition: form-data; name="model"\r\nX-Note: caf\xe9\r\n\r\nwallowed\r\n--${B}--\r\n`],
    ['in a quoted name', `${latin1File.replace('name="file"', 'name="fil\xe9"')}${model('wallowed')}--${B}--\r\n`],
    ['in an unquoted file name', `${latin1File.replace('filename="caf\xe9 \x85.wav"', 'filename=caf\xe9.wav')}${model('wallowed')}--${B}--\r\n`],
    ["in a file part's other header", `${latin1File.replace('Content-Type: audio/wav', 'Content-Type: audio/wav; x=\xe9')}${model('wallowed')}--${B}--\r\n`],
  ];
  for (const [label, body] of refusedForms) {
    await t.test(label, async (t) => {
      const setup = await setUp(t);
      const res = await post(setup.gw, setup.keyValue, '/v1/audio/transcriptions', `multipart/form-data; boundary=${B}`, Buffer.from(body, 'latin1'));
      await refused(t, setup, res, 'invalid_request_body', label);
    });
  }
});

// An overlong spelling of "m" (C1 AD) is U+FFFD to the gateway; a decoder that accepts
// overlong forms reads a second "model", the last, which JSON parsers let win.
const OVERLONG_KEY = (pad: string) => Buffer.concat([Buffer.from(`{"model":"wallowed","messages":[{"role":"user","content":"${pad}"}],"`), Buffer.of(0xc1, 0xad), Buffer.from('odel":"wforbidden"}')]);

t.test('a JSON body that is not UTF-8: 400 invalid_json, buffered, chunked or spooled, no upstream call', async (t) => {
  await t.test('buffered', async (t) => {
    const setup = await setUp(t);
    const res = await post(setup.gw, setup.keyValue, '/v1/chat/completions', 'application/json', OVERLONG_KEY('hi'));
    await refused(t, setup, res, 'invalid_json', 'buffered');
  });
  await t.test('chunked, ending within the buffered size', async (t) => {
    const setup = await setUp(t);
    const body = OVERLONG_KEY('hi');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body.subarray(0, 10));
        controller.enqueue(body.subarray(10));
        controller.close();
      },
    });
    const res = await post(setup.gw, setup.keyValue, '/v1/chat/completions', 'application/json', stream);
    await refused(t, setup, res, 'invalid_json', 'chunked');
  });
  await t.test('spooled (over 1 MiB), the bad bytes cut by a chunk boundary', async (t) => {
    const setup = await setUp(t);
    const body = OVERLONG_KEY('x'.repeat(1024 * 1024 + 1000));
    const cut = body.indexOf(Buffer.of(0xc1)) + 1;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < cut; at += 64 * 1024) controller.enqueue(body.subarray(at, Math.min(at + 64 * 1024, cut)));
        controller.enqueue(body.subarray(cut));
        controller.close();
      },
    });
    const res = await post(setup.gw, setup.keyValue, '/v1/chat/completions', 'application/json', stream);
    await refused(t, setup, res, 'invalid_json', 'spooled');
  });
  await t.test('UTF-8 across chunk boundaries passes, spooled', async (t) => {
    const setup = await setUp(t);
    const body = Buffer.from(`{"model":"wallowed","messages":[{"role":"user","content":"${'é😀'.repeat(300_000)}"}]}`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length; at += 65_537) controller.enqueue(body.subarray(at, at + 65_537));
        controller.close();
      },
    });
    const res = await post(setup.gw, setup.keyValue, '/v1/chat/completions', 'application/json', stream);
    t.equal(res.status, 200);
    await res.arrayBuffer();
    t.ok(setup.upstream.requests[0]!.body.equals(Buffer.from(body.toString().replace('"wallowed"', '"up-wallowed"'))), 'forwarded as sent but the model');
  });
});
