import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';

const AUTH_KEY = 'end-to-end-auth-key-0123456789abcdef';

/** The composition `switchyard serve` runs: management plane, data plane, SQLite logs, one port. */
async function serve(t: Test) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-e2e-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = async (method: string, p: string, token = AUTH_KEY, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() });
    const res = await fetch(`${server.url}${p}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as { code: number | string; data: Record<string, any> } };
  };
  return { server, api };
}

t.test('a recorded request body written by the data plane is readable by the AUTH_KEY and the key that sent it only', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1}}');
  });
  t.teardown(() => upstream.close());
  const { server, api } = await serve(t);
  const group = (await api('POST', '/api/groups', AUTH_KEY, { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }] })).json.data;
  await api('POST', `/api/groups/${group.id}/credentials/import`, AUTH_KEY, { credentials: 'sk-upstream-e2e-0001' });
  const sender = (await api('POST', '/api/access-keys', AUTH_KEY, { name: 'sender', protocols: ['x-completions'], record_request_body: true })).json.data;
  const other = (await api('POST', '/api/access-keys', AUTH_KEY, { name: 'other', protocols: ['x-completions'] })).json.data;

  const original = { model: 'chat', messages: [{ role: 'user', content: 'my secret prompt' }] };
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${sender.value}`, 'content-type': 'application/json' }, body: JSON.stringify(original) });
  t.equal(res.status, 200);
  const id = res.headers.get('x-switchyard-request-id')!;
  await server.logs.flush();

  const own = await api('GET', `/api/logs/${id}`, sender.value);
  t.equal(own.status, 200);
  t.match(own.json.data, { access_key_id: sender.id, upstream_model: 'vendor-chat', usage: { input_tokens: 4, output_tokens: 1 } });
  t.same(own.json.data.request_body.body, original, 'the original body, as sent');
  t.same((await api('GET', `/api/logs/${id}`)).json.data.request_body, own.json.data.request_body, 'the AUTH_KEY reads it too');
  t.equal((await api('GET', `/api/logs/${id}`, other.value)).status, 404, 'another key does not see the request at all');
  t.notMatch(JSON.stringify(own.json.data), 'sk-upstream-e2e-0001', 'the upstream credential is in no log');
});

t.test('a cooldown the data plane sets after an upstream 429 shows in route inspection', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '120' });
    res.end('{"error":{"message":"slow down","type":"rate_limit_error"}}');
  });
  t.teardown(() => upstream.close());
  const { server, api } = await serve(t);
  const group = (await api('POST', '/api/groups', AUTH_KEY, { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }] })).json.data;
  await api('POST', `/api/groups/${group.id}/credentials/import`, AUTH_KEY, { credentials: 'sk-upstream-e2e-0002' });
  const key = (await api('POST', '/api/access-keys', AUTH_KEY, { name: 'k', protocols: ['x-completions'] })).json.data;

  const before = (await api('POST', '/api/route/inspect', AUTH_KEY, { protocol: 'x-completions', external_model: 'chat', access_key_id: key.id })).json.data;
  t.match(before, { routable: true, candidates: [{ included: true, credentials: [{ available: true }] }] });

  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}` }, body: JSON.stringify({ model: 'chat', messages: [] }) });
  t.equal(res.status, 429, 'the upstream answer comes back as sent');
  t.equal(res.headers.get('retry-after'), '120');

  const after = (await api('POST', '/api/route/inspect', AUTH_KEY, { protocol: 'x-completions', external_model: 'chat', access_key_id: key.id })).json.data;
  t.match(after, { routable: false, reason_code: 'no_available_credential', candidates: [{ included: false, credentials: [{ available: false, state: 'cooldown', reason_code: 'credential_cooldown' }] }] });
  const until = Date.parse(after.candidates[0].credentials[0].cooldown_until);
  t.ok(until > Date.now() + 60_000, 'the cooldown honours Retry-After');
  const refused = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}` }, body: JSON.stringify({ model: 'chat', messages: [] }) });
  t.equal(refused.status, 503, 'the data plane agrees: nothing is sent while the only credential cools down');
  t.equal(upstream.requests.length, 1);
});
