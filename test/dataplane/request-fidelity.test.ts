import t from 'tap';
import { request as httpRequest } from 'node:http';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';

t.test('a body whose model is not remapped reaches the upstream byte for byte; the query keeps its encoding, minus the key', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"candidates":[]}');
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'same', upstream: 'same' }], protocols: ['x-completions'] });
  const generateKey = (await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'gem', upstream: 'gem' }], protocols: ['x-generate'] })).keyValue;
  const raw = '{ "model": "same",\n  "temperature": 1.0, "messages": [{"role":"user","content":"caf\\u00e9"}], "n": 1e0 }';
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: raw });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  t.equal(upstream.requests[0]?.body.toString(), raw, 'spacing, 1.0, 1e0 and the escape arrive as sent');

  const generate = await fetch(`${gw.url}/v1beta/models/gem:generateContent?z=%2F+b&key=${generateKey}&a=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents":[]}' });
  t.equal(generate.status, 200);
  await generate.arrayBuffer();
  t.equal(upstream.requests[1]?.url, '/v1beta/models/gem:generateContent?z=%2F+b&a=1', 'same encoding and order; the AccessKey is gone');
});

t.test('a client that leaves before its body ends is logged as client_closed, and nothing goes upstream', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.end('{}'));
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-length': '1000' } });
  req.on('error', () => {});
  req.write('{"model":"m",');
  setTimeout(() => req.destroy(), 50);
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
  }, 'the log record of the abandoned request');
  t.equal(record.error_code, 'client_closed');
  t.equal(record.status, 499);
  t.equal(record.client_aborted, true, 'counted with the other client aborts');
  t.equal(upstream.requests.length, 0);
});

t.test('a mapped model changes only its own bytes: big integers, number spellings and duplicate keys arrive as sent', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'ext', upstream: 'vendor-1' }], protocols: ['x-completions'] });
  const raw = '{"messages":[{"role":"user","content":"hi"}], "seed": 12345678901234567890, "temperature": 1.0, "x": 1, "x": 2, "model": "ext"}';
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: raw });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  t.equal(upstream.requests[0]?.body.toString(), raw.replace('"ext"', '"vendor-1"'));
  t.equal(upstream.requests[0]?.headers['content-length'], String(Buffer.byteLength(raw) + 5));
});
