import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

// The data plane refuses a model name over 1024 bytes of UTF-8 wherever a request gives it
// (invalid_request_body), so an external name that long, such as 300 emoji (1200 bytes, within
// the schema's 300 characters), could be listed and inspected as routable but never called.

const LONG = '\u{1F999}'.repeat(300);
const LONGEST = '\u{1F999}'.repeat(256);

t.test('an external model name over 1024 bytes of UTF-8 is refused on create and on the models PUT', async (t) => {
  const gw = await startGateway(t);
  const created = await gw.create('/api/groups', { name: 'g', channel: 'ch02', base_url: 'https://upstream.test', models: [{ external: 'ok' }, { external: LONG, upstream: 'u' }] });
  t.equal(created.status, 400);
  t.match(created.json, { code: 'VALIDATION_FAILED', data: { field: 'models[1].external', reason: 'invalid_value', max_bytes: 1024 } });
  t.same((await gw.api('GET', '/api/groups')).json.data, [], 'no Group was created');

  const group = await seedGroup(gw, ['kept']);
  const put = await gw.api('PUT', `/api/groups/${group}/models`, { body: { models: [{ external: LONG, upstream: 'u' }] } });
  t.equal(put.status, 400);
  t.match(put.json, { code: 'VALIDATION_FAILED', data: { field: 'models[0].external', reason: 'invalid_value', max_bytes: 1024 } });
  t.same((await gw.api('GET', `/api/groups/${group}/models`)).json.data, [{ external: 'kept', upstream: 'kept' }], 'the list was not replaced');
  // The upstream name is the gateway's to send, not a client's to give: it may be longer.
  t.equal((await gw.api('PUT', `/api/groups/${group}/models`, { body: { models: [{ external: 'short', upstream: LONG }] } })).status, 200);
});

t.test('an external name of exactly 1024 bytes is accepted and served', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}');
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const group = await seedGroup(gw, [], { base_url: upstream.url, models: [{ external: LONGEST, upstream: 'u' }] });
  t.equal((await gw.create(`/api/groups/${group}/credentials/import`, { credentials: 'sk-upstream-bytes-01' })).status, 200);
  const key = await seedAccessKey(gw);
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: LONGEST, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.text();
  t.equal(res.status, 200);
});
