import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { managementApi, startDiscoveryServer } from './helpers/discovery-server.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A Group's versionless_api (docs/data-plane.md, "Choices made here"): an upstream whose API
// paths have no version segment is reached at {base_url}/chat/completions.

const AUTH_KEY = 'versionless-api-auth-key-0123456789abcdef';

/** An upstream answering chat completions and model lists, recording each request's path. */
async function recordingUpstream(t: Test) {
  const upstream = await startUpstream((req, res) => {
    if (req.method === 'GET') writeJson(res, 200, { object: 'list', data: [{ id: 'vendor-chat' }, { id: 'other' }] });
    else writeJson(res, 200, { id: 'c', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } });
  });
  t.teardown(() => upstream.close());
  return upstream;
}

/** The server as `switchyard serve` composes it (with real model discovery), over the management API. */
async function serve(t: Test) {
  const server = await startDiscoveryServer(t, AUTH_KEY, { openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount() });
  const api = managementApi(server.url, AUTH_KEY);
  const key = (await api('POST', '/api/access-keys', { name: 'k', protocols: ['x-completions'] })).json.data.value as string;
  const chat = async () => {
    const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'chat', messages: [] }) });
    await res.arrayBuffer();
    return res.status;
  };
  return { server, api, chat };
}

const MODELS = [{ external: 'chat', upstream: 'vendor-chat' }];

t.test('a versionless_api Group created over the API reaches the upstream at {base_url}/chat/completions, and reads back the flag', async (t) => {
  const upstream = await recordingUpstream(t);
  const { api, chat } = await serve(t);
  const created = await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: `${upstream.url}/inference`, versionless_api: true, models: MODELS });
  t.equal(created.status, 201);
  t.equal(created.json.data.versionless_api, true);
  await api('POST', `/api/groups/${created.json.data.id}/credentials/import`, { credentials: 'sk-upstream-versionless-01' });
  t.equal(await chat(), 200);
  t.same(upstream.requests.map((r) => r.url), ['/inference/chat/completions']);
  t.equal((await api('GET', `/api/groups/${created.json.data.id}`)).json.data.versionless_api, true);
  t.equal((await api('GET', `/api/groups/${created.json.data.id}/settings`)).json.data.versionless_api, true);
});

t.test('without the flag the path keeps its version, and the Group reads false; a settings PUT turns it on and off', async (t) => {
  const upstream = await recordingUpstream(t);
  const { api, chat } = await serve(t);
  const created = await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: MODELS });
  const id = created.json.data.id;
  t.equal(created.json.data.versionless_api, false);
  await api('POST', `/api/groups/${id}/credentials/import`, { credentials: 'sk-upstream-versionless-02' });
  t.equal(await chat(), 200);
  const on = await api('PUT', `/api/groups/${id}/settings`, { versionless_api: true });
  t.equal(on.status, 200);
  t.equal(on.json.data.versionless_api, true);
  t.equal(await chat(), 200);
  t.equal((await api('PUT', `/api/groups/${id}/settings`, { versionless_api: false })).json.data.versionless_api, false);
  t.equal(await chat(), 200);
  t.same(upstream.requests.map((r) => r.url), ['/v1/chat/completions', '/chat/completions', '/v1/chat/completions']);
});

t.test("a credential's own base URL in a versionless_api Group is joined the same way", async (t) => {
  const groupUpstream = await recordingUpstream(t);
  const own = await recordingUpstream(t);
  const { api, chat } = await serve(t);
  const id = (await api('POST', '/api/groups', { name: 'relay', channel: 'ch32', base_url: groupUpstream.url, versionless_api: true, models: MODELS })).json.data.id;
  const connected = await api('POST', `/api/groups/${id}/credentials/connect`, { kind: 'api_key_base_url', fields: { api_key: 'sk-upstream-versionless-03', base_url: `${own.url}/openai` } });
  t.equal(connected.status, 201);
  t.equal(await chat(), 200);
  t.same(own.requests.map((r) => r.url), ['/openai/chat/completions']);
  t.same(groupUpstream.requests, []);
});

t.test('model discovery in a versionless_api Group lists from {base_url}/models', async (t) => {
  const upstream = await recordingUpstream(t);
  const { api } = await serve(t);
  const id = (await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, versionless_api: true, models: MODELS })).json.data.id;
  await api('POST', `/api/groups/${id}/credentials/import`, { credentials: 'sk-upstream-versionless-04' });
  const discovered = await api('POST', '/api/models/discover', { group_id: id });
  t.equal(discovered.status, 200, JSON.stringify(discovered.json));
  t.same(
    discovered.json.data.models.map((m: { id: string }) => m.id),
    ['vendor-chat', 'other'],
  );
  t.same(upstream.requests.map((r) => r.url), ['/models']);
});

t.test('versionless_api of another type is VALIDATION_FAILED naming the field, on create and on settings', async (t) => {
  const { api } = await serve(t);
  const bad = await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: 'http://127.0.0.1:9', versionless_api: 'yes' });
  t.equal(bad.status, 400);
  t.equal(bad.json.code, 'VALIDATION_FAILED');
  t.match(bad.json.data, { field: 'versionless_api', reason: 'wrong_type' });
  const id = (await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: 'http://127.0.0.1:9' })).json.data.id;
  const badPut = await api('PUT', `/api/groups/${id}/settings`, { versionless_api: 1 });
  t.equal(badPut.status, 400);
  t.match(badPut.json.data, { field: 'versionless_api', reason: 'wrong_type' });
  t.equal((await api('GET', `/api/groups/${id}`)).json.data.versionless_api, false, 'nothing saved');
});
