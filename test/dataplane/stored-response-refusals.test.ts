import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { seedGroup } from './helpers/dataplane-scenarios.ts';
import { startGateway } from '../management/support/gateway.ts';

// A response the gateway remembers goes to the Group that created it (docs/data-plane.md,
// "Stored responses"). When that Group's route refuses the operation (an N* subset, a channel
// note), the answer is the engine's refusal for its channel, as for an id the gateway does not
// remember; 503 no_available_credential stays for a holder that is gone, disabled or shut to the key.


async function setup(t: Test, channel: string) {
  let created = 0;
  const upstream = await startUpstream((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/v1/responses' ? JSON.stringify({ id: `resp_${channel}_${++created}`, object: 'response', status: 'completed' }) : '{}');
  });
  const gw = await startGateway(t, { openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount() });
  t.teardown(() => upstream.close());
  const { server } = gw;
  const api = async (method: string, p: string, body?: unknown) => (body === undefined ? await gw.api(method, p) : await gw.create(p, body)).json as { data: any };
  const { group } = await seedGroup(server.store, { channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-holder'] });
  const keyValue: string = (await api('POST', '/api/access-keys', { name: `k-${randomUUID()}`, protocols: ['x-responses'] })).data.value;
  /** Sends the request with the key, and gives its status, headers, error and log record as the management API reads it. */
  const send = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${server.url}${p}`, { method, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const answer = (await res.json()) as { id?: string; error?: { code: string; message: string } };
    await server.logs.flush();
    const record = (await api('GET', `/api/logs/${res.headers.get('x-switchyard-request-id')}`)).data;
    return { status: res.status, headers: res.headers, answer, record };
  };
  const create = async (): Promise<string> => {
    const r = await send('POST', '/v1/responses', { model: 'm', input: 'hi' });
    if (r.status !== 200 || r.answer.id === undefined) throw new Error(`create answered ${r.status}`);
    return r.answer.id;
  };
  return { server, upstream, group, keyValue, send, create };
}

t.test('ch32 (note 3, N*): retrieval, input items, deletion and cancellation of a response it created are refused 400 as for an unknown id', async (t) => {
  const { upstream, group, send, create } = await setup(t, 'ch32');
  const id = await create();
  const before = upstream.requests.length;
  for (const [method, p] of [['GET', `/v1/responses/${id}`], ['GET', `/v1/responses/${id}/input_items`], ['DELETE', `/v1/responses/${id}`], ['POST', `/v1/responses/${id}/cancel`]] as const) {
    const unknown = await send(method, p.replace(id, 'resp_unknown'));
    const remembered = await send(method, p);
    t.equal(remembered.status, 400, `${method} ${p}: status`);
    t.equal(remembered.answer.error?.code, 'operation_outside_native_subset', `${method} ${p}: the engine's refusal`);
    t.same(remembered.answer.error, unknown.answer.error, `${method} ${p}: the same answer as for an id not remembered`);
    t.match(remembered.record, { status: 400, error_code: 'operation_outside_native_subset', group_id: String(group.id), channel: 'ch32', attempt_count: 0 }, `${method} ${p}: the record names the holder`);
  }
  t.equal(upstream.requests.length, before, 'nothing reached the upstream');
});

t.test('ch29 (note 11): continuing, retrieving or deleting a response it created is refused 400 restricted_by_channel_note', async (t) => {
  const { upstream, group, send, create } = await setup(t, 'ch29');
  const id = await create();
  const before = upstream.requests.length;
  const cases = [
    ['POST', '/v1/responses', { model: 'm', input: 'next', previous_response_id: id }],
    ['GET', `/v1/responses/${id}`, undefined],
    ['DELETE', `/v1/responses/${id}`, undefined],
  ] as const;
  for (const [method, p, body] of cases) {
    const r = await send(method, p, body);
    t.equal(r.status, 400, `${method} ${p}: status`);
    t.match(r.answer.error, { code: 'restricted_by_channel_note', message: /note 11/ }, `${method} ${p}: note 11`);
    t.not(r.headers.get('x-should-retry'), 'false', `${method} ${p}: not the unavailable holder's answer`);
    t.match(r.record, { error_code: 'restricted_by_channel_note', group_id: String(group.id), channel: 'ch29', upstream_model: body ? 'vendor-m' : null }, `${method} ${p}: the record names the holder`);
  }
  t.equal(upstream.requests.length, before, 'nothing reached the upstream');
});

t.test('a holder that was disabled is still 503 no_available_credential, not its channel refusal', async (t) => {
  const { server, upstream, group, send, create } = await setup(t, 'ch32');
  const id = await create();
  await server.store.groups.update(group.id, { enabled: false });
  const r = await send('GET', `/v1/responses/${id}`);
  t.equal(r.status, 503);
  t.equal(r.answer.error?.code, 'no_available_credential');
  t.match(r.answer.error?.message, /The Group that holds this response is not available to this key/);
  t.equal(r.headers.get('x-should-retry'), 'false');
  t.equal(upstream.requests.length, 1, 'only the create reached the upstream');
});

t.test('ch32: another method on a response path (HEAD, PUT, OPTIONS) is 405, not forwarded through the namespace passthrough around N*', async (t) => {
  const { server, upstream, group, keyValue, send, create } = await setup(t, 'ch32');
  const id = await create();
  const before = upstream.requests.length;
  for (const method of ['HEAD', 'PUT', 'OPTIONS']) {
    const res = await fetch(`${server.url}/v1/responses/${id}`, { method, headers: { authorization: `Bearer ${keyValue}` } });
    t.equal(res.status, 405, `${method}: status`);
    t.same(res.headers.get('allow')?.split(', ').sort(), ['DELETE', 'GET'], `${method}: Allow`);
  }
  t.equal((await send('GET', `/v1/responses/${id}`)).answer.error?.code, 'operation_outside_native_subset', 'GET is still the N* refusal');
  t.equal(upstream.requests.length, before, 'nothing reached the upstream');
  // A path no named endpoint takes is still the passthrough's (ch32 serves it).
  const passthrough = await send('POST', '/v1/responses/vendor-ext/run', {});
  t.equal(passthrough.status, 200);
  t.match(passthrough.record, { operation: 'responses-namespace', group_id: String(group.id) });
  t.equal(upstream.requests.at(-1)?.url, '/v1/responses/vendor-ext/run');
});
