import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { managementApi, startDiscoveryServer } from './helpers/discovery-server.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// Vendors' documented base URL paths (docs/data-plane.md, "Base URLs by vendor"; the whole table
// is test/upstream/vendor-base-urls.test.ts) behind a loopback origin, through the server as
// `switchyard serve` composes it: a Group created over the management API with the path the
// vendor documents reaches the vendor's endpoint path.

const AUTH_KEY = 'vendor-base-urls-auth-key-0123456789abcdef';

/** An upstream answering each protocol in its own shape (by the path's end), recording each request's path. */
async function vendorUpstream(t: Test) {
  const upstream = await startUpstream((req, res) => {
    const url = req.url;
    if (req.method === 'GET') writeJson(res, 200, { object: 'list', data: [{ id: 'vendor-model' }] });
    else if (url.endsWith('/chat/completions')) writeJson(res, 200, { id: 'c', object: 'chat.completion', created: 1, model: 'vendor-model', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    else if (url.endsWith('/responses')) writeJson(res, 200, { id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: 'vendor-model', output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } });
    else if (url.endsWith('/messages')) writeJson(res, 200, { id: 'msg_1', type: 'message', role: 'assistant', model: 'vendor-model', content: [], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } });
    else if (url.includes(':generateContent')) writeJson(res, 200, { candidates: [], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } });
    else writeJson(res, 404, { error: { message: `no route ${url}` } });
  });
  t.teardown(() => upstream.close());
  return upstream;
}

async function serve(t: Test) {
  const server = await startDiscoveryServer(t, AUTH_KEY, { openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount() });
  const api = managementApi(server.url, AUTH_KEY);
  const key = (await api('POST', '/api/access-keys', { name: 'k', protocols: ['x-completions', 'x-responses', 'x-messages', 'x-generate'] })).json.data.value as string;
  /** A Group on the relay channel serving every protocol, at the vendor's base URL path under the upstream's origin. */
  const group = async (name: string, baseUrl: string, versionless = false) => {
    const created = await api('POST', '/api/groups', { name, channel: 'ch32', base_url: baseUrl, versionless_api: versionless, models: [{ external: name, upstream: 'vendor-model' }] });
    t.equal(created.status, 201, JSON.stringify(created.json));
    const imported = await api('POST', `/api/groups/${created.json.data.id}/credentials/import`, { credentials: `sk-upstream-${name}-0123456789` });
    t.equal(imported.status, 200, JSON.stringify(imported.json));
    return created.json.data.id as string;
  };
  const send = async (p: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${p}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, text };
  };
  return { api, group, send };
}

t.test('OpenAI-compatible base URLs ending in their version: Zhipu /api/paas/v4 and Volcengine Ark /api/v3', async (t) => {
  const upstream = await vendorUpstream(t);
  const { group, send } = await serve(t);
  await group('zhipu', `${upstream.url}/api/paas/v4/`);
  await group('ark', `${upstream.url}/api/v3`);
  const chat = await send('/v1/chat/completions', { model: 'zhipu', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200, chat.text);
  const responses = await send('/v1/responses', { model: 'ark', input: 'hi' });
  t.equal(responses.status, 200, responses.text);
  t.same(upstream.requests.map((r) => r.url), ['/api/paas/v4/chat/completions', '/api/v3/responses']);
});

t.test("Gemini's OpenAI compatibility (/v1beta/openai/) and Cloudflare's /openai with versionless_api, data plane and model discovery", async (t) => {
  const upstream = await vendorUpstream(t);
  const { api, group, send } = await serve(t);
  const gemini = await group('gemini-openai', `${upstream.url}/v1beta/openai/`, true);
  await group('cf-openai', `${upstream.url}/v1/ACCOUNT/GATEWAY/openai`, true);
  const chat = await send('/v1/chat/completions', { model: 'gemini-openai', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200, chat.text);
  const responses = await send('/v1/responses', { model: 'cf-openai', input: 'hi' });
  t.equal(responses.status, 200, responses.text);
  const discovered = await api('POST', '/api/models/discover', { group_id: gemini });
  t.equal(discovered.status, 200, JSON.stringify(discovered.json));
  t.same(upstream.requests.map((r) => r.url), ['/v1beta/openai/chat/completions', '/v1/ACCOUNT/GATEWAY/openai/responses', '/v1beta/openai/models']);
});

t.test('Anthropic-compatible base URLs: DeepSeek /anthropic and Cloudflare /v1/{account}/{gateway}/anthropic', async (t) => {
  const upstream = await vendorUpstream(t);
  const { group, send } = await serve(t);
  await group('deepseek-anthropic', `${upstream.url}/anthropic`);
  await group('cf-anthropic', `${upstream.url}/v1/ACCOUNT/GATEWAY/anthropic`);
  for (const model of ['deepseek-anthropic', 'cf-anthropic']) {
    const res = await send('/v1/messages', { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' });
    t.equal(res.status, 200, res.text);
  }
  t.same(upstream.requests.map((r) => r.url), ['/anthropic/v1/messages', '/v1/ACCOUNT/GATEWAY/anthropic/v1/messages']);
});

t.test('Gemini at the host and at /v1beta both reach /v1beta/models/{model}:generateContent', async (t) => {
  const upstream = await vendorUpstream(t);
  const { group, send } = await serve(t);
  await group('gemini-host', upstream.url);
  await group('gemini-v1beta', `${upstream.url}/v1beta`);
  for (const model of ['gemini-host', 'gemini-v1beta']) {
    const res = await send(`/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    t.equal(res.status, 200, res.text);
  }
  t.same(upstream.requests.map((r) => r.url), ['/v1beta/models/vendor-model:generateContent', '/v1beta/models/vendor-model:generateContent']);
});
