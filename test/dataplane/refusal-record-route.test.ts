import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { startGateway } from '../management/support/gateway.ts';

// A route refusal made after a Group was chosen (docs/data-plane.md, step 5) is that Group's:
// its record names the Group, channel and upstream model, so `/api/logs?group_id=` and the
// usage `group` dimension attribute it, as they do a `no_available_credential`.


async function setup(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const gw = await startGateway(t, { openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount() });
  t.teardown(() => upstream.close());
  const { server } = gw;
  const api = async (method: string, p: string, body?: unknown) => (body === undefined ? await gw.api(method, p) : await gw.create(p, body));
  const group = async (body: Record<string, unknown>): Promise<{ id: number }> => (await api('POST', '/api/groups', { base_url: upstream.url, ...body })).json.data;
  const key = async (protocols: string[]): Promise<string> => (await api('POST', '/api/access-keys', { name: `k-${randomUUID()}`, protocols })).json.data.value;
  /** Sends the request, and gives its status, its error code and its log record as the management API reads it. */
  const send = async (keyValue: string, method: string, p: string, body?: unknown) => {
    const res = await fetch(`${server.url}${p}`, { method, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const answer = (await res.json()) as { error: { code: string } };
    await server.logs.flush();
    const record = (await api('GET', `/api/logs/${res.headers.get('x-switchyard-request-id')}`)).json.data;
    return { status: res.status, code: answer.error.code, record };
  };
  return { upstream, api, group, key, send };
}

t.test('conversion_not_available: the record names the refusing Group, and the logs and usage attribute it', async (t) => {
  const { upstream, api, group, key, send } = await setup(t);
  // A disabled Group before it on another channel is not the one refusing: it lends the record nothing.
  const off = await group({ name: 'off', channel: 'ch01', priority: 10, enabled: false, models: [{ external: 'chat', upstream: 'other-model' }] });
  const g = await group({ name: 'chat', channel: 'ch02', models: [{ external: 'chat', upstream: 'vendor-chat' }] });
  const r = await send(await key(['x-responses']), 'POST', '/v1/responses', { model: 'chat', input: 'x' });
  t.equal(r.status, 400);
  t.equal(r.code, 'conversion_not_available');
  t.match(r.record, { error_code: 'conversion_not_available', group_id: String(g.id), channel: 'ch02', upstream_model: 'vendor-chat', credential_id: null, route_mode: 'C', effective: 'converted', external_model: 'chat', attempt_count: 0 });
  const logs = (await api('GET', `/api/logs?group_id=${g.id}`)).json.data;
  t.same(logs.items.map((i: { request_id: string }) => i.request_id), [r.record.request_id], 'found under its Group');
  t.same((await api('GET', `/api/logs?group_id=${off.id}`)).json.data.items, [], 'not under the disabled Group');
  const usage = (await api('GET', '/api/usage?group_by=group')).json.data;
  t.match(usage.rows, [{ group_id: String(g.id), requests: 1, errors: 1 }], 'the usage group dimension counts it');
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('an engine refusal (a matrix note, an undeclared route) names the Group, channel and upstream model, with no route mode', async (t) => {
  const { upstream, group, key, send } = await setup(t);
  // Note 3: ch32 serves no responses input-tokens count.
  const noted = await group({ name: 'noted', channel: 'ch32', models: [{ external: 'm', upstream: 'vendor-m' }] });
  const r = await send(await key(['x-responses']), 'POST', '/v1/responses/input_tokens', { model: 'm', input: 'hi' });
  t.equal(r.status, 400);
  t.equal(r.code, 'restricted_by_channel_note');
  t.match(r.record, { error_code: 'restricted_by_channel_note', group_id: String(noted.id), channel: 'ch32', upstream_model: 'vendor-m', credential_id: null, route_mode: null, effective: null });

  const chat = await group({ name: 'chat', channel: 'ch02', models: [{ external: 'img', upstream: 'vendor-img' }] });
  const undeclared = await send(await key(['x-images']), 'POST', '/v1/images/generations', { model: 'img', prompt: 'p' });
  t.equal(undeclared.code, 'route_not_declared');
  t.match(undeclared.record, { error_code: 'route_not_declared', group_id: String(chat.id), channel: 'ch02', upstream_model: 'vendor-img', route_mode: null });
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('model_not_visible names no Group: none was chosen', async (t) => {
  const { group, key, send } = await setup(t);
  await group({ name: 'off', channel: 'ch02', enabled: false, models: [{ external: 'chat', upstream: 'vendor-chat' }] });
  const r = await send(await key(['x-completions']), 'POST', '/v1/chat/completions', { model: 'chat', messages: [] });
  t.equal(r.code, 'model_not_visible');
  t.match(r.record, { group_id: null, channel: null, upstream_model: null, route_mode: null, effective: null });
});
