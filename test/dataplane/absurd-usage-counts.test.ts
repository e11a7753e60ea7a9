import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';

// Token counts an upstream reports that are no count (1e300, 1.5) are read as absent, and a cost
// that is no finite number is 0: records, usage sums and cost quotas stay numbers.

/** Usage member text with the counts spelled as given; `escaped` spells the keys with \u005f. */
function usageText(prompt: string, completion: string, escaped: boolean): string {
  const text = `{"prompt_tokens":${prompt},"completion_tokens":${completion},"total_tokens":17}`;
  return escaped ? text.replaceAll('_tokens', '\\u005ftokens') : text;
}

/** Answers each request with the next usage text, as a JSON body or as a completions stream. */
async function upstreamReporting(t: Test, usages: string[]) {
  let next = 0;
  const upstream = await startUpstream((req, res) => {
    const usage = usages[next++ % usages.length]!;
    if (JSON.parse(req.body.toString()).stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`);
      res.write(`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":${usage}}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":${usage}}`);
  });
  t.teardown(() => upstream.close());
  return upstream;
}

async function gatewayBefore(t: Test, upstreamUrl: string, price: { input_per_mtok: number; output_per_mtok: number }): Promise<{ gw: Gateway; keyValue: string }> {
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['team-m'], { base_url: upstreamUrl, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-absurd-01' })).status, 200);
  t.equal((await gw.api('PUT', '/api/model-prices/vendor-m', { body: price, headers: { 'Idempotency-Key': 'price-1' } })).status, 200);
  const key = await seedAccessKey(gw, { quota: { total: { cost: 1000 } } });
  return { gw, keyValue: key.value };
}

/** One chat request; its log record once written. */
async function chat(gw: Gateway, keyValue: string, stream: boolean) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team-m', messages: [{ role: 'user', content: 'hi' }], stream }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`chat: ${res.status} ${text}`);
  const id = res.headers.get('x-switchyard-request-id');
  return eventually(async () => {
    const found = await gw.api('GET', `/api/logs/${id}`);
    return found.status === 200 ? found.json.data : undefined;
  }, `log record ${id}`);
}

for (const stream of [false, true]) {
  // The plain spelling is read by the byte scanner; an escaped key leaves the usage to JSON.parse.
  for (const escaped of [false, true]) {
    const how = `${stream ? 'a stream' : 'a JSON answer'}${escaped ? ' with escaped keys' : ''}`;
    t.test(`${how}: counts of 1e300 and 1.5 are read as absent, so records, usage and quotas stay numbers`, async (t) => {
      const upstream = await upstreamReporting(t, [usageText('1e300', '7', escaped), usageText('40', '1.5', escaped)]);
      // 1 USD a token either way, the API's highest price: 1e300 tokens would cost Infinity.
      const { gw, keyValue } = await gatewayBefore(t, upstream.url, { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 });
      const first = await chat(gw, keyValue, stream);
      t.same(first.usage, { input_tokens: 0, output_tokens: 7, cached_tokens: 0, reasoning_tokens: 0 }, '1e300 prompt tokens: none counted');
      t.equal(first.cost, 7);
      const second = await chat(gw, keyValue, stream);
      t.same(second.usage, { input_tokens: 40, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 }, '1.5 completion tokens: none counted');
      t.equal(second.cost, 40);
      const usage = (await gw.api('GET', '/api/usage')).json.data;
      t.match(usage.totals, { requests: 2, input_tokens: 40, output_tokens: 7, cost: 47 }, '/api/usage totals are numbers');
      const home = (await gw.api('GET', '/api/home', { token: keyValue })).json.data;
      t.match(home.quota, { exceeded: false, lines: [{ metric: 'cost', limit: 1000, used: 47 }] }, 'the cost quota counts what was charged');
    });
  }
}

t.test('a stored price whose product is no finite number costs 0, as a missing price does', async (t) => {
  const upstream = await upstreamReporting(t, [usageText('10', '0', false)]);
  const { gw, keyValue } = await gatewayBefore(t, upstream.url, { input_per_mtok: 1, output_per_mtok: 1 });
  // Beyond what the API accepts, and what a start accepts from the data file: put straight into the store.
  await gw.server.store.modelPrices.put('vendor-m', { input_per_mtok: 1e308, output_per_mtok: 1 }, 'manual');
  const record = await chat(gw, keyValue, false);
  t.same(record.usage, { input_tokens: 10, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 });
  t.equal(record.cost, 0, 'not computable: 0, not Infinity (null in JSON)');
  t.equal((await gw.api('GET', '/api/usage')).json.data.totals.cost, 0, '/api/usage totals stay a number');
});
