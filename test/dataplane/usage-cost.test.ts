import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { computeCost } from '../../src/usage/index.ts';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { createKey, deferred, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

t.test('prices input, cached input and output per million tokens', async (t) => {
  const usage = { input_tokens: 1_000_000, output_tokens: 500_000, cached_tokens: 200_000, reasoning_tokens: 100_000 };
  t.equal(computeCost(usage, { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 }), 1.6 + 0.1 + 4);
});

t.test('cached input falls back to the input price', async (t) => {
  const usage = { input_tokens: 1000, output_tokens: 0, cached_tokens: 400, reasoning_tokens: 0 };
  t.equal(computeCost(usage, { input_per_mtok: 3, output_per_mtok: 15 }), 0.003);
});

t.test('no price, no cost; small counts keep precision', async (t) => {
  const usage = { input_tokens: 7, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 };
  t.equal(computeCost(usage, undefined), 0);
  t.equal(computeCost(usage, { input_per_mtok: 0.15, output_per_mtok: 0.6 }), 0.00000285);
});

// A price is looked up by the upstream model that answered (docs/management-api.md, Model
// prices): two Groups map `team-m` to models of their own, and the external name's price never applies.

t.test('priced by the upstream model that answered: after a failover, the other Group\'s; edits and deletions apply from the next request', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    const model = JSON.parse(req.body.toString()).model;
    if (model === 'vendor-a') {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"down"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model, choices: [], usage: { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 } }));
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, priority: 10, models: [{ external: 'team-m', upstream: 'vendor-a' }], secrets: ['sk-up-a'] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-b' }], secrets: ['sk-up-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  await gw.store.modelPrices.put('team-m', { input_per_mtok: 100, output_per_mtok: 100 }, 'manual');
  await gw.store.modelPrices.put('vendor-a', { input_per_mtok: 2.5, output_per_mtok: 10 }, 'manual');
  await gw.store.modelPrices.put('vendor-b', { input_per_mtok: 5, output_per_mtok: 20 }, 'manual');
  const chat = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [{ role: 'user', content: 'hi' }] }) });
    t.equal(res.status, 200);
    await res.text();
    return waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  };
  t.match(await chat(), { external_model: 'team-m', upstream_model: 'vendor-b', attempts: [{ group_id: '1', status: 500 }, { group_id: '2', status: 200 }], cost: 0.005 }, 'the Group failed over to prices it');
  await gw.store.modelPrices.put('vendor-b', { input_per_mtok: 3, output_per_mtok: 20 }, 'manual');
  t.match(await chat(), { upstream_model: 'vendor-b', cost: 0.003 }, 'an edited price applies from the next request');
  await gw.store.modelPrices.delete('vendor-b');
  t.match(await chat(), { upstream_model: 'vendor-b', cost: 0 }, 'no price of its own: 0, not the external name\'s');
});

t.test('a price edited while a request runs: that request keeps the price it was routed with', async (t) => {
  const arrived = deferred();
  const answer = deferred();
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    arrived.resolve();
    await answer.promise;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":0,"total_tokens":1000}}');
  });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-m'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 2.5, output_per_mtok: 10 }, 'manual');
  const running = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-m', messages: [] }) });
  await arrived.promise;
  await gw.store.modelPrices.put('vendor-m', { input_per_mtok: 7, output_per_mtok: 10 }, 'manual');
  answer.resolve();
  const res = await running;
  await res.text();
  t.equal((await waitForLog(gw, res.headers.get('x-switchyard-request-id'))).cost, 0.0025, '1000 input tokens at 2.5 per million');
});

// Through the real data plane: an image answer past the 4 MiB capture limit, its usage last.

const IMAGE_BYTES = 6 * 1024 * 1024;

/** An images answer of about 6 MB of base64 with `usage` (or none) last, as /v1/images/generations answers. */
function largeImageAnswer(usage: object | undefined): Buffer {
  const b64 = randomBytes((IMAGE_BYTES / 4) * 3).toString('base64');
  const body = { created: 1750000000, data: [{ b64_json: b64 }], output_format: 'png', size: '1024x1024', ...(usage ? { usage } : {}) };
  return Buffer.from(JSON.stringify(body));
}

/** The answer written in pieces, its last 300 bytes in small paced ones, so the usage member straddles several chunks. */
function answerInPieces(body: Buffer) {
  return async (_req: RecordedUpstreamRequest, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
    const last = body.length - 300;
    for (let at = 0; at < last; at += 40_001) res.write(body.subarray(at, Math.min(at + 40_001, last)));
    for (let at = last; at < body.length; at += 20) {
      await new Promise<void>((resolve) => res.write(body.subarray(at, at + 20), () => setTimeout(resolve, 2)));
    }
    res.end();
  };
}

async function generateImage(t: Test, body: Buffer) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, answerInPieces(body));
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }], protocols: ['x-images'] });
  await gw.store.modelPrices.put('vendor-img', { input_per_mtok: 2, output_per_mtok: 8 }, 'manual');
  const res = await fetch(`${gw.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'img', prompt: 'a lighthouse' }) });
  const received = Buffer.from(await res.arrayBuffer());
  return { res, received, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
}

t.test('an images answer past the capture limit: usage read from its tail, cost from the price, body unchanged', async (t) => {
  const usage = { input_tokens: 250_000, input_tokens_details: { text_tokens: 250_000, image_tokens: 0 }, output_tokens: 125_000, output_tokens_details: { text_tokens: 0, image_tokens: 125_000 }, total_tokens: 375_000 };
  const body = largeImageAnswer(usage);
  t.ok(body.length > 4 * 1024 * 1024, 'larger than the 4 MiB capture limit');
  const { res, received, record } = await generateImage(t, body);
  t.equal(res.status, 200);
  t.ok(received.equals(body), 'the client gets the body byte for byte');
  t.same(record.usage, { input_tokens: 250_000, output_tokens: 125_000, cached_tokens: 0, reasoning_tokens: 0 });
  // 250000 * 2 / 1e6 + 125000 * 8 / 1e6
  t.equal(record.cost, 1.5, 'cost from the model price');
  t.match(record, { status: 200, error_code: null });
});

t.test('an images answer past the capture limit without usage: zeros, no error', async (t) => {
  const body = largeImageAnswer(undefined);
  const { res, received, record } = await generateImage(t, body);
  t.equal(res.status, 200);
  t.ok(received.equals(body), 'the client gets the body byte for byte');
  t.same(record.usage, { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
  t.equal(record.cost, 0);
  t.match(record, { status: 200, error_code: null });
});
