import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';

// docs/data-plane.md §3: routing reads the last of a repeated member and an upstream might read
// the first, so a body that can be read two ways gets the same verdict whatever its size. With
// bufferedJsonBytes at 1 KiB, each body is sent small (parsed whole) and padded (spooled).
const BUFFERED_JSON_BYTES = 1024;
const PAD = `"pad":"${'p'.repeat(2 * BUFFERED_JSON_BYTES)}"`;
const SIZES = [
  { label: 'buffered', body: (json: string) => json },
  { label: 'spooled', body: (json: string) => json.replace('{', `{${PAD},`) },
];

async function completionsGateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
    { bufferedJsonBytes: BUFFERED_JSON_BYTES },
  );
  const { keyValue } = await seedRoute(gw.store, {
    channel: 'ch02',
    baseUrl: upstream.url,
    models: [
      { external: 'expensive', upstream: 'expensive' },
      { external: 'cheap', upstream: 'cheap' },
      { external: 'ext', upstream: 'vendor-1' },
    ],
    protocols: ['x-completions'],
  });
  const send = (body: string) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  return { upstream, send };
}

t.test('a second model key spelled with escapes is replaced too, even when the routed model maps to itself', async (t) => {
  const { upstream, send } = await completionsGateway(t);
  for (const { label, body } of SIZES) {
    // JSON.parse reads "cheap" (the last, its key decoding to "model"): both must name it upstream.
    const raw = body('{"model":"expensive","messages":[],"mod\\u0065l":"cheap"}');
    const res = await send(raw);
    t.equal(res.status, 200, label);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), raw.replace('"expensive"', '"cheap"'), `${label}: every model names the routed one`);
    t.equal(upstream.requests.at(-1)?.body.toString().includes('expensive'), false, label);
  }
});

t.test('a body with one model, escapes or not, arrives as sent; a mapped one changes only its model', async (t) => {
  const { upstream, send } = await completionsGateway(t);
  for (const { label, body } of SIZES) {
    for (const raw of [body('{"model":"cheap","messages":[{"role":"user","content":"hi"}]}'), body('{"model":"cheap","messages":[{"role":"user","content":"caf\\u00e9 \\"model\\""}],"tools":[{"model":"x"}]}')]) {
      const res = await send(raw);
      t.equal(res.status, 200, label);
      await res.arrayBuffer();
      t.equal(upstream.requests.at(-1)?.body.toString(), raw, `${label}: byte for byte`);
    }
    const mapped = body('{"m\\u006fdel":"ext","messages":[]}');
    const res = await send(mapped);
    t.equal(res.status, 200, label);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), mapped.replace('"ext"', '"vendor-1"'), `${label}: an escaped key alone is mapped`);
  }
});

t.test('a body with two top-level stream or stream_options members is refused before any upstream call', async (t) => {
  const { upstream, send } = await completionsGateway(t);
  const ambiguous = [
    '{"model":"cheap","messages":[],"stream":true,"stream_options":{"include_usage":false},"stream_options":{}}',
    '{"model":"cheap","messages":[],"stream":true,"stream":false}',
    '{"model":"cheap","messages":[],"stream":true,"stre\\u0061m":false}',
    '{"model":"cheap","messages":[],"stream":true,"stream_options":{},"stream\\u005foptions":{"include_usage":false}}',
  ];
  for (const { label, body } of SIZES) {
    for (const json of ambiguous) {
      const res = await send(body(json));
      t.equal(res.status, 400, `${label}: ${json}`);
      t.match(await res.json(), { error: { code: 'invalid_request_body', message: /more than one top-level "stream(_options)?"/ } }, `${label}: ${json}`);
    }
  }
  t.equal(upstream.requests.length, 0, 'no body reached the upstream');
});

t.test('stream and stream_options nested in another member or inside a string are not repeats', async (t) => {
  const { upstream, send } = await completionsGateway(t);
  for (const { label, body } of SIZES) {
    const raw = body('{"model":"cheap","stream":false,"metadata":{"stream":true,"stream_options":{"include_usage":false}},"messages":[{"role":"user","content":"\\"stream_options\\":{} \\"stream\\":true"}],"stream_options":{"include_usage":true}}');
    const res = await send(raw);
    t.equal(res.status, 200, label);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), raw, `${label}: arrives as sent`);
  }
});

// Go's encoding/json (Ollama, Go relays in front of a vendor) matches a member to its field
// without regard to case, the last in the body winning (golang/go#43664): a "Model" after the
// model routing read would be the model served, whatever the key may use.
t.test('a top-level member that differs from one routing reads only by case is refused before any upstream call', async (t) => {
  const { upstream, send } = await completionsGateway(t);
  const variants = [
    '{"model":"cheap","messages":[],"Model":"expensive"}',
    '{"model":"cheap","messages":[],"MODEL":"expensive"}',
    '{"MODEL":"expensive","messages":[],"model":"cheap"}',
    '{"model":"cheap","messages":[],"M\\u006fdel":"expensive"}',
    '{"model":"cheap","messages":[],"stream":false,"Stream":true}',
    // U+017F, the long s, folds to "s" in Go.
    '{"model":"cheap","messages":[],"stream":false,"\\u017ftream":true}',
    '{"model":"cheap","messages":[],"stream":true,"Stream_Options":{"include_usage":false}}',
    '{"model":"cheap","input":"x","INPUT":[1,2]}',
  ];
  for (const { label, body } of SIZES) {
    for (const json of variants) {
      const res = await send(body(json));
      t.equal(res.status, 400, `${label}: ${json}`);
      t.match(await res.json(), { error: { code: 'invalid_request_body', message: /may read as "(model|stream|stream_options|input)"/ } }, `${label}: ${json}`);
    }
  }
  t.equal(upstream.requests.length, 0, 'no body reached the upstream');
  for (const { label, body } of SIZES) {
    const raw = body('{"model":"cheap","messages":[{"role":"user","content":"hi","Model":"x"}],"metadata":{"Model":"expensive","Stream":true},"Models":1,"modeL_x":2}');
    const res = await send(raw);
    t.equal(res.status, 200, `${label}: nested or other names pass`);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), raw, `${label}: arrives as sent`);
  }
});

const BOUNDARY = 'XyZb0undary';
const part = (headers: string, value: string) => `--${BOUNDARY}\r\n${headers}\r\n\r\n${value}\r\n`;
const form = (modelHeaders: string, model: string) =>
  Buffer.from(part('Content-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav', 'RIFF....WAVE') + part(`Content-Disposition: form-data; name="model"${modelHeaders}`, model) + `--${BOUNDARY}--\r\n`);

t.test('a form whose model part has a decoding transfer encoding is refused; 7bit, 8bit and binary pass', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"text":"hi"}');
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'ext', upstream: 'whisper-up' }], protocols: ['x-suite'] });
  const send = (body: Buffer) => fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
  // "ZXh0" is base64 of "ext": the upstream would decode another model than the one routed.
  const encoded: Array<[string, string]> = [
    ['\r\nContent-Transfer-Encoding: base64', 'ZXh0'],
    ['\r\ncontent-transfer-encoding: Quoted-Printable', 'ext'],
    ['\r\nContent-Transfer-Encoding: 8bit\r\nContent-Transfer-Encoding: base64', 'ZXh0'],
  ];
  for (const [headers, model] of encoded) {
    const res = await send(form(headers, model));
    t.equal(res.status, 400, headers);
    t.match(await res.json(), { error: { code: 'invalid_request_body', message: /Content-Transfer-Encoding/ } }, headers);
  }
  t.equal(upstream.requests.length, 0, 'no form reached the upstream');
  for (const headers of ['\r\nContent-Transfer-Encoding: 8bit', '\r\nContent-Transfer-Encoding: BINARY', '\r\nContent-Transfer-Encoding: 7bit', '']) {
    const res = await send(form(headers, 'ext'));
    t.equal(res.status, 200, headers);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), form(headers, 'whisper-up').toString(), `${JSON.stringify(headers)}: only the model rewritten`);
  }
});

// ch29 refuses continuing stored state (note 11) and ch21's rerank anything but text (note 5):
// rules that read the last of a repeated member, while the upstream may read the first.
async function notedGateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
    { bufferedJsonBytes: BUFFERED_JSON_BYTES },
  );
  const responses = await seedRoute(gw.store, { channel: 'ch29', baseUrl: upstream.url, models: [{ external: 'm29', upstream: 'u29' }], protocols: ['x-responses'] });
  const rerank = await seedRoute(gw.store, { channel: 'ch21', baseUrl: upstream.url, models: [{ external: 'r21', upstream: 'ur21' }], protocols: ['rerank'] });
  const post = (path: string, keyValue: string) => (body: string) => fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body });
  return { upstream, respond: post('/v1/responses', responses.keyValue), rerank: post('/v1/rerank', rerank.keyValue) };
}

t.test('a body repeating a member a channel note reads is refused before any upstream call', async (t) => {
  const { upstream, respond, rerank } = await notedGateway(t);
  const ambiguous: Array<[typeof respond, string, string]> = [
    [respond, 'previous_response_id', '{"model":"m29","input":"hi","previous_response_id":"resp_1","previous_response_id":null}'],
    [respond, 'conversation', '{"model":"m29","input":"hi","conversation":"conv_1","conversation":null}'],
    [respond, 'conversation', '{"model":"m29","input":"hi","conversation":"conv_1","c\\u006fnversation":""}'],
    [rerank, 'documents', '{"model":"r21","query":"q","documents":[{"image":"x"}],"documents":["a"]}'],
    [rerank, 'query', '{"model":"r21","query":{"image":"x"},"query":"q","documents":["a"]}'],
    [rerank, 'input', '{"model":"r21","input":[{"image":"x"}],"query":"q","documents":["a"],"input" : "a"}'],
  ];
  for (const { label, body } of SIZES) {
    for (const [send, key, json] of ambiguous) {
      const res = await send(body(json));
      t.equal(res.status, 400, `${label}: ${json}`);
      t.match(await res.json(), { error: { code: 'invalid_request_body', message: `more than one top-level "${key}" member` } }, `${label}: ${json}`);
    }
  }
  t.equal(upstream.requests.length, 0, 'no body reached the upstream');
});

t.test('those members nested in another member or inside a string are not repeats', async (t) => {
  const { upstream, rerank } = await notedGateway(t);
  for (const { label, body } of SIZES) {
    const raw = body('{"model":"r21","query":"q","metadata":{"query":"x","documents":[],"input":1},"documents":["\\"documents\\": [] \\"query\\":","b"],"input":"a","tags":[{"input":2}]}');
    const res = await rerank(raw);
    t.equal(res.status, 200, label);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.body.toString(), raw.replace('"r21"', '"ur21"'), `${label}: arrives as sent`);
  }
});

t.test('an input member too large to keep is still of kind other when it is an object; an array of unknown kind passes', async (t) => {
  const { upstream, rerank } = await notedGateway(t);
  // Over bufferedJsonBytes, the spooled body's value is not kept: its first byte tells an object.
  const image = 'i'.repeat(2 * BUFFERED_JSON_BYTES);
  for (const json of [`{"model":"r21","query":{"image":"${image}"},"documents":["a"]}`, `{"model":"r21","query":"q","documents":["a"],"input":{"image":"${image}"}}`, '{"model":"r21","query":{"image":"x"},"documents":["a"]}']) {
    const res = await rerank(json);
    t.equal(res.status, 400, `${json.length} bytes`);
    t.match(await res.json(), { error: { code: 'restricted_by_channel_note', message: /input_kind other than text \(note 5\)/ } }, `${json.length} bytes`);
  }
  t.equal(upstream.requests.length, 0, 'no body reached the upstream');
  // docs/data-plane.md §3: a larger array's kind is not known, so no rule on it applies.
  const res = await rerank(`{"model":"r21","query":"q","documents":[{"image":"${image}"}]}`);
  t.equal(res.status, 200, 'a large array is forwarded');
  await res.arrayBuffer();
});
