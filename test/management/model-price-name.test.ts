import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { eventually } from '../dataplane/helpers/dataplane-scenarios.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

// A price is for a name a Group's model can have, by the Group's own rule: up to 300
// characters counted as the Group's schema counts them (code points, so an emoji is one), and
// no control character or lone surrogate, which no Group's model holds.

const PRICE = { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 };

t.test('a Group model of 300 emoji can be priced, and its requests are charged', async (t) => {
  const upstreamModel = '\u{1F999}'.repeat(300);
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}');
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const group = await seedGroup(gw, [], { base_url: upstream.url, models: [{ external: 'llama', upstream: upstreamModel }] });
  t.equal((await gw.create(`/api/groups/${group}/credentials/import`, { credentials: 'sk-upstream-emoji-01' })).status, 200);
  const put = await gw.api('PUT', `/api/model-prices/${encodeURIComponent(upstreamModel)}`, { body: PRICE });
  t.equal(put.status, 200, 'the name the Group holds is a name a price can have');
  t.equal(put.json.data?.model, upstreamModel);

  const key = await seedAccessKey(gw);
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.text();
  t.equal(res.status, 200);
  const id = res.headers.get('x-switchyard-request-id');
  const record = await eventually(async () => {
    const found = await gw.api('GET', `/api/logs/${id}`);
    return found.status === 200 ? found.json.data : undefined;
  }, `log record ${id}`);
  t.equal(record.cost, 7, 'priced at one USD a token');
});

t.test('a name no Group model can have is refused, and nothing is stored', async (t) => {
  const gw = await startGateway(t);
  // A line break, a tab, NUL, DEL, 301 emoji, and spaces alone.
  for (const [name, rule] of [['a%0Ab', 'pattern'], ['%09m', 'pattern'], ['a%00b', 'pattern'], ['a%7Fb', 'pattern'], [`${'%F0%9F%A6%99'.repeat(301)}`, 'maxLength'], ['%20%20', 'blank']]) {
    const refused = await gw.api('PUT', `/api/model-prices/${name}`, { body: PRICE });
    t.equal(refused.status, 400, `${name!.slice(0, 12)}: refused`);
    t.match(refused.json.data, { field: 'model', reason: 'invalid_value', rule }, `${name!.slice(0, 12)}: names the rule it broke`);
  }
  t.same((await gw.api('GET', '/api/model-prices?source=manual')).json.data, [], 'nothing refused was stored');
});
