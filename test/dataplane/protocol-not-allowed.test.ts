import t, { type Test } from 'tap';
import { OPERATIONS, PROTOCOL_IDS } from '../../src/generated/index.ts';
import { DECISIONS_ENDPOINTS } from '../fixtures/decisions-endpoints.ts';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, nativeChannelFor, seedGroup, waitForLog, type Operation } from './helpers/dataplane-scenarios.ts';
import { clientBody, clientPath, externalModel, upstreamModel } from './helpers/native-requests.ts';
import { upgradeAnswer } from './helpers/ws-upstream.ts';
import { checkErrorShape, type Style } from './helpers/error-shape.ts';

// Issue 4 items 1 and 8, specification section 5 item 8, endpoint by endpoint: every registered
// endpoint checks the protocol decisions.md §2 gives it (read from the hand transcription in
// test/fixtures, not from the generated table), so a key allowing exactly that protocol gets
// through and a key allowing every other one is refused 403 protocol_not_allowed in the
// endpoint's error shape (§6) before anything is sent upstream; WebSocket ones through an upgrade.


/** The protocol §2 lists the endpoint under. */
function protocolOfSection2(method: string, path: string): string | undefined {
  const unnamed = (p: string) => p.replace(/\{\w+\*\}/g, '{*}').replace(/\{\w+\}/g, '{}');
  return DECISIONS_ENDPOINTS.find((e) => (e.under ? path === e.path || path.startsWith(`${e.path}/`) : e.method === method && unnamed(e.path) === unnamed(path)))?.protocol;
}

/** decisions.md §6: the shape each protocol's SDKs parse. */
function styleOf(protocol: string): Style {
  if (protocol === 'x-messages') return 'messages';
  return protocol === 'x-generate' || protocol === 'x-embeddings' || protocol === 'x-live' ? 'generate' : 'completions';
}

// Each endpoint by each method it takes.
const CASES = Object.values(OPERATIONS).flatMap((op) => (op.method === 'ANY' ? ['GET', 'POST', 'PATCH', 'DELETE'] : [op.method]).map((method) => ({ op, method, protocol: protocolOfSection2(op.method, op.path) })));

t.test('every protocol id of decisions.md §2 has a case', async (t) => {
  t.same(new Set(CASES.map((c) => c.protocol)), new Set(PROTOCOL_IDS));
});

// x-live's only channel takes OAuth credentials, which need an authorization flow: its Group
// gets none, so the key allowed x-live gets as far as choosing a credential.
const LIVE_CHANNEL = 'ch10';

interface Answer {
  status: number;
  body: string;
  requestId: string | null | undefined;
}

async function call(op: Operation, method: string, gatewayUrl: string, keyValue: string, protocol: string): Promise<Answer> {
  if (op.body === 'websocket') {
    const answer = await upgradeAnswer(`${gatewayUrl.replace('http', 'ws')}${op.path}?model=${externalModel(op)}&key=${keyValue}`, { openedAs101: true });
    return answer === 101 ? { status: 101, body: '', requestId: undefined } : { status: answer.status, body: answer.body, requestId: answer.headers['x-switchyard-request-id'] };
  }
  // A passthrough body is passed on unread: any JSON will do.
  const { body, headers } = method === 'GET' || method === 'DELETE' ? { body: undefined, headers: {} } : clientBody(op.body === 'raw' ? { ...op, body: 'json' } : op, false);
  const res = await fetch(`${gatewayUrl}${clientPath(op)}`, { method, headers: { ...clientAuthHeaders(protocol, keyValue), ...headers }, ...(body !== undefined ? { body } : {}) });
  return { status: res.status, body: await res.text(), requestId: res.headers.get('x-switchyard-request-id') };
}

for (const { op, method, protocol } of CASES) {
  t.test(`${method} ${op.path}: only its §2 protocol lets a key through`, async (t) => {
    if (protocol === undefined) return t.fail(`${op.method} ${op.path} is not in §2`);
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    const models = [{ external: externalModel(op), upstream: upstreamModel(op) }];
    const channel = protocol === 'x-live' ? LIVE_CHANNEL : nativeChannelFor(op);
    if (channel === undefined) return t.fail(`no native channel for ${op.id}`);
    if (protocol === 'x-live') await gw.store.groups.create({ name: 'live', channel, base_url: upstream.url, models, priority: 0, weight: 1 });
    else await seedGroup(gw.store, { channel, baseUrl: upstream.url, models, secrets: ['sk-up-per-endpoint-0123456789'] });
    const only = await createKey(gw.store, { protocols: [protocol] });
    const others = await createKey(gw.store, { protocols: PROTOCOL_IDS.filter((p) => p !== protocol) });

    const allowed = await call(op, method, gw.url, only.keyValue, protocol);
    if (protocol === 'x-live') {
      // docs/data-plane.md, Failover: 503 no_available_credential naming the Group without credentials.
      t.equal(allowed.status, 503, `a key allowing only ${protocol} passes the protocol check`, { body: allowed.body });
      t.match(JSON.parse(allowed.body), { error: { code: 503, status: 'UNAVAILABLE', message: /Group \d+ has no credentials/, details: [{ reason: 'no_available_credential' }] } }, 'generate shape');
      t.match(await waitForLog(gw, allowed.requestId), { protocol, operation: op.id, status: 503, error_code: 'no_available_credential', access_key_id: only.key.id });
    } else {
      t.equal(allowed.status, 200, `a key allowing only ${protocol} is answered the upstream's 200`, { body: allowed.body });
      t.equal(upstream.requests.length, 1, `a key allowing only ${protocol} reaches the upstream`);
    }

    const sent = upstream.requests.length;
    const refused = await call(op, method, gw.url, others.keyValue, protocol);
    t.equal(refused.status, 403, `a key allowing every protocol but ${protocol} is refused on ${channel}`, { body: refused.body });
    t.equal(upstream.requests.length, sent, 'nothing sent upstream');
    checkErrorShape(t, JSON.parse(refused.body), styleOf(protocol), 403, 'protocol_not_allowed');
    t.match(await waitForLog(gw, refused.requestId), { protocol, operation: op.id, status: 403, error_code: 'protocol_not_allowed', access_key_id: others.key.id });
  });
}

t.test('the model lists need no protocol: a key allowing none lists and retrieves in each shape', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.end('{}'));
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-per-endpoint-0123456789'] });
  const { keyValue } = await createKey(gw.store, { protocols: [] });
  const bearer = { authorization: `Bearer ${keyValue}` };
  const cases: [string, Record<string, string>, unknown][] = [
    ['/v1/models', bearer, { object: 'list', data: [{ id: 'team-m', object: 'model' }] }],
    ['/v1/models', { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01' }, { data: [{ type: 'model', id: 'team-m' }], has_more: false }],
    ['/v1beta/models', { 'x-goog-api-key': keyValue }, { models: [{ name: 'models/team-m' }] }],
    ['/v1/models/team-m', bearer, { id: 'team-m', object: 'model' }],
    ['/v1beta/models/team-m', { 'x-goog-api-key': keyValue }, { name: 'models/team-m' }],
  ];
  for (const [path, headers, shape] of cases) {
    const res = await fetch(`${gw.url}${path}`, { headers });
    t.equal(res.status, 200, `${path} ${Object.keys(headers).join(', ')}`);
    t.match(await res.json(), shape);
  }
  t.equal(upstream.requests.length, 0, 'no upstream asked');
});
