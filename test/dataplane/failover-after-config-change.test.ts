import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, deferred, eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A credential or Group the operator deletes, disables or rotates while an earlier attempt of a
// request waits on its upstream: once the management API acknowledged the change, failover
// neither tries what was deleted or disabled nor sends a replaced secret upstream.

const A = 'sk-failover-first-0000000001';
const B = 'sk-failover-second-000000002';
const B_NEW = 'sk-failover-second-rotated-3';
const MODEL = 'chat-model';

function answer(res: ServerResponse, status: number): void {
  writeJson(res, status, status === 200 ? { id: 'c', object: 'chat.completion', choices: [] } : { error: { message: `upstream says ${status}` } });
}

/**
 * An upstream that answers every secret 200, except A: 429 at once while `failA`, and, while
 * `holdA`, 429 only once the test releases it (`arrived` tells that the request is there).
 */
async function heldUpstream(t: Test) {
  const state = { failA: false, holdA: false, arrived: deferred(), release: deferred() };
  const upstream = await startUpstream(async (req, res) => {
    if (secretOf(req) !== A) return answer(res, 200);
    if (state.holdA) {
      state.arrived.resolve();
      await state.release.promise;
      return answer(res, 429);
    }
    answer(res, state.failA ? 429 : 200);
  });
  t.teardown(() => upstream.close());
  return { upstream, state, secrets: () => upstream.requests.map(secretOf) };
}

async function chat(gw: Gateway, keyValue: string): Promise<{ status: number; requestId: string | null }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
  await res.text();
  return { status: res.status, requestId: res.headers.get('x-request-id') };
}

async function importOne(gw: Gateway, groupId: number, secret: string): Promise<number> {
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: secret });
  return imported.json.data.created[0].id as number;
}

async function attemptsOf(gw: Gateway, requestId: string | null): Promise<Array<{ credential_id: string; group_id: string; status: number | null }>> {
  const record = await eventually(async () => {
    const res = await gw.api('GET', `/api/logs/${requestId}`);
    return res.status === 200 ? res.json.data : undefined;
  }, 'the log record');
  return record.attempts;
}

/**
 * Sends a request whose first attempt (A) is held at the upstream, applies `change` through the
 * management API (acknowledged 200), then lets A answer 429: the request's outcome and what the
 * upstream saw during it.
 */
async function changeWhileHeld(t: Test, gw: Gateway, keyValue: string, up: Awaited<ReturnType<typeof heldUpstream>>, change: () => Promise<{ status: number }>) {
  const before = up.secrets().length;
  up.state.holdA = true;
  const inFlight = chat(gw, keyValue);
  await withTimeout(up.state.arrived.promise, 5000, 'the first attempt at the upstream');
  t.equal((await change()).status, 200, 'the change is acknowledged');
  up.state.release.resolve();
  const outcome = await withTimeout(inFlight, 5000, 'the held request');
  return { ...outcome, seen: up.secrets().slice(before), attempts: await attemptsOf(gw, outcome.requestId) };
}

/** One Group holding A then B, both secrets cached by a request each (round robin: A, then B); the next request starts with A. */
async function oneGroup(t: Test) {
  const up = await heldUpstream(t);
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], { base_url: up.upstream.url });
  await importOne(gw, groupId, A);
  const b = await importOne(gw, groupId, B);
  const key = await seedAccessKey(gw);
  t.equal((await chat(gw, key.value)).status, 200);
  t.equal((await chat(gw, key.value)).status, 200);
  t.same(up.secrets(), [A, B], 'warm: both secrets were used, so both are cached');
  return { up, gw, key, groupId, bPath: `/api/groups/${groupId}/credentials/${b}` };
}

t.test('a credential deleted while the first attempt waits is not failed over to: the client gets the 429', async (t) => {
  const { up, gw, key, bPath } = await oneGroup(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('DELETE', bPath));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'the deleted secret never reached the upstream again');
  t.equal(held.attempts.length, 1);
});

t.test('a credential disabled while the first attempt waits is not failed over to: the client gets the 429', async (t) => {
  const { up, gw, key, bPath } = await oneGroup(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.create(`${bPath}/disable`, { reason: 'leaked' }));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'the disabled credential was not tried');
  t.equal(held.attempts.length, 1);
});

t.test('a credential rotated while the first attempt waits: failover sends the new secret, never the old', async (t) => {
  const { up, gw, key, bPath } = await oneGroup(t);
  // Another millisecond for the rotation, as an operator's would be.
  gw.clock.advance(1000);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PATCH', bPath, { body: { fields: { api_key: B_NEW } } }));
  t.equal(held.status, 200, 'the rotated credential answers');
  t.same(held.seen, [A, B_NEW], 'the upstream saw the new secret only');
  t.equal(held.attempts.length, 2);
});

/**
 * Two Groups: the first (higher priority) holds A, the second B. B's secret is cached by a
 * request A answered 429 at once; A's cooldown has run out before the held request.
 */
async function twoGroups(t: Test) {
  const up = await heldUpstream(t);
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const first = await seedGroup(gw, [MODEL], { name: 'first', base_url: up.upstream.url, priority: 10 });
  await importOne(gw, first, A);
  const second = await seedGroup(gw, [MODEL], { name: 'second', base_url: up.upstream.url, priority: 0 });
  await importOne(gw, second, B);
  const key = await seedAccessKey(gw);
  up.state.failA = true;
  t.equal((await chat(gw, key.value)).status, 200);
  up.state.failA = false;
  t.same(up.secrets(), [A, B], 'warm: the second Group answered for the first, and its secret is cached');
  gw.clock.advance(3600_000);
  return { up, gw, key, second };
}

t.test('a Group disabled while an attempt in an earlier Group waits is not failed over to', async (t) => {
  const { up, gw, key, second } = await twoGroups(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PUT', `/api/groups/${second}/settings`, { body: { enabled: false } }));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'no credential of the disabled Group was tried');
  t.equal(held.attempts.length, 1);
});

t.test('a Group deleted while an attempt in an earlier Group waits is not failed over to', async (t) => {
  const { up, gw, key, second } = await twoGroups(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('DELETE', `/api/groups/${second}`));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'the deleted Group\'s secret never reached the upstream again');
  t.equal(held.attempts.length, 1);
});

// The Group as configured then too: its address and its model mapping.

t.test('a Group whose base_url changes while the first attempt waits: the next credential goes to the new address', async (t) => {
  const { up, gw, key, groupId } = await oneGroup(t);
  const moved = await startUpstream((_req, res) => answer(res, 200));
  t.teardown(() => moved.close());
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { base_url: moved.url } }));
  t.equal(held.status, 200, 'the credential at the new address answers');
  t.same(held.seen, [A], 'the old address saw only the attempt made before the change');
  t.same(moved.requests.map(secretOf), [B], 'the new address got the next attempt');
  t.equal(held.attempts.length, 2);
});

t.test('a Group whose model mapping changes while the first attempt waits: the next credential asks for the new upstream model', async (t) => {
  const { up, gw, key, groupId } = await oneGroup(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PUT', `/api/groups/${groupId}/models`, { body: { models: [{ external: MODEL, upstream: 'vendor-renamed' }] } }));
  t.equal(held.status, 200);
  t.same(held.seen, [A, B]);
  const sent = up.upstream.requests.slice(-2).map((r) => JSON.parse(r.body.toString()).model);
  t.same(sent, [MODEL, 'vendor-renamed'], 'the first attempt had the old mapping, the next the new');
});

t.test('a Group that stops mapping the model while an attempt in an earlier Group waits is not failed over to', async (t) => {
  const { up, gw, key, second } = await twoGroups(t);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PUT', `/api/groups/${second}/models`, { body: { models: [{ external: 'another-model' }] } }));
  t.equal(held.status, 429);
  t.same(held.seen, [A], 'the Group that no longer serves the model was not tried');
  t.equal(held.attempts.length, 1);
});

// The managed proxy too, at every scope: the global one as much as the Group's and the credential's.

t.test('the global proxy changed while the first attempt waits: the next credential goes through the new proxy', async (t) => {
  const before = await startHttpConnectProxy();
  const after = await startHttpConnectProxy();
  t.teardown(() => Promise.all([before.close(), after.close()]));
  const { up, gw, key } = await oneGroup(t);
  t.equal((await gw.api('PUT', '/api/settings', { body: { proxy_url: before.url } })).status, 200);
  const held = await changeWhileHeld(t, gw, key.value, up, () => gw.api('PUT', '/api/settings', { body: { proxy_url: after.url } }));
  t.equal(held.status, 200);
  t.same(held.seen, [A, B]);
  const host = new URL(up.upstream.url).host;
  t.same(before.tunnels, [host], 'the first attempt went through the proxy set when it was sent');
  t.same(after.tunnels, [host], 'the next attempt went through the proxy set since');
});
