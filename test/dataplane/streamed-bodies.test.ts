import t from 'tap';
import { startDataPlane, seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';

const ok = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

t.test('multipart image edit streams through with only the model field rewritten', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'], recordBody: true });
  const form = new FormData();
  form.append('model', 'img');
  form.append('prompt', 'a red square');
  form.append('image', new Blob([Buffer.alloc(300_000, 7)], { type: 'image/png' }), 'in.png');
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: form });
  t.equal(res.status, 200);
  const seen = upstream.requests[0]!;
  const text = seen.body.toString('latin1');
  t.match(text, /name="model"\r\n\r\nvendor-img\r\n/);
  t.notMatch(text, /\r\n\r\nimg\r\n/);
  t.equal(seen.body.length, Number(seen.headers['content-length']), 'content-length follows the rewritten model');
  t.ok(seen.body.includes(Buffer.alloc(300_000, 7)), 'the file part arrives intact');
  await gw.logs.flush();
  const record = await gw.logs.get(res.headers.get('x-switchyard-request-id')!);
  t.match(record?.request_body, { state: 'recorded', original_bytes: Number(seen.body.length) - 'vendor-img'.length + 'img'.length });
});

t.test('a JSON body above the buffering size streams with the model rewritten', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok, { bufferedJsonBytes: 64 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'ocr', upstream: 'vendor-ocr' }], protocols: ['x-suite'] });
  const document = 'A'.repeat(2 * 1024 * 1024);
  const res = await fetch(`${gw.url}/v1/ocr`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'ocr', document: { type: 'document_url', document_url: `data:application/pdf;base64,${document}` } }) });
  t.equal(res.status, 200);
  const sent = JSON.parse(upstream.requests[0]!.body.toString());
  t.equal(sent.model, 'vendor-ocr');
  t.equal(sent.document.document_url.length, document.length + 'data:application/pdf;base64,'.length);
});

t.test('a streamed body over the limit is refused with 413', async (t) => {
  const gw = await startDataPlane({ maxBodyBytes: 1024 });
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'ocr', upstream: 'o' }], protocols: ['x-suite'] });
  const res = await fetch(`${gw.url}/v1/ocr`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'ocr', pad: 'x'.repeat(5000) }) });
  t.equal(res.status, 413);
  t.match(await res.json(), { error: { code: 'request_too_large' } });
});
