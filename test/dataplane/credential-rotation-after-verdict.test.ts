import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody } from './helpers/dataplane-scenarios.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';

// A verdict on the old secret that landed before a rotation (a disable, a long cooldown) does
// not hold for the new secret; the operator's own disable does.

const OLD = 'sk-verdict-old-0000000001';
const NEW = 'sk-verdict-new-0000000002';
const MODEL = 'chat-model';

function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  const body = status === 200 ? JSON.stringify({ id: 'c', object: 'chat.completion', choices: [] }) : JSON.stringify({ error: { message: `upstream says ${status}` } });
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

/** The old secret gets `oldAnswer`, the new one 200. */
async function setup(t: Test, oldAnswer: (res: ServerResponse) => void) {
  const upstream = await startUpstream((req, res) => (secretOf(req) === NEW ? answer(res, 200) : oldAnswer(res)));
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], { base_url: upstream.url });
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: OLD });
  const key = await seedAccessKey(gw);
  const path = `/api/groups/${groupId}/credentials/${imported.json.data.created[0].id as number}`;
  return { gw, key, path, newSeen: () => upstream.requests.filter((r) => secretOf(r) === NEW).length };
}

async function chat(gw: Gateway, keyValue: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
  await res.text();
  return res.status;
}

async function rotate(t: Test, gw: Gateway, path: string) {
  gw.clock.advance(1000);
  const rotated = await gw.api('PATCH', path, { body: { fields: { api_key: NEW } } });
  t.equal(rotated.status, 200, 'the rotation is acknowledged');
  return rotated.json.data;
}

t.test('a cooldown of an hour on the old secret: after the rotation the next request uses the new one', async (t) => {
  const { gw, key, path, newSeen } = await setup(t, (res) => answer(res, 429, { 'retry-after': '3600' }));
  t.equal(await chat(gw, key.value), 429, 'the old secret is answered 429');
  t.equal((await gw.api('GET', path)).json.data.state, 'cooldown');
  const rotated = await rotate(t, gw, path);
  t.equal(rotated.state, 'active', 'the rotated credential is usable');
  t.equal(rotated.cooldown_until, null);
  t.equal(await chat(gw, key.value), 200, 'the next request succeeds');
  t.equal(newSeen(), 1, 'with the new secret');
});

t.test('a 401 on the old secret: the rotation re-enables the credential', async (t) => {
  const { gw, key, path, newSeen } = await setup(t, (res) => answer(res, 401));
  t.equal(await chat(gw, key.value), 401);
  t.equal((await gw.api('GET', path)).json.data.state, 'disabled');
  const rotated = await rotate(t, gw, path);
  t.match(rotated, { state: 'active', enabled: true, disabled_reason: null });
  t.equal(await chat(gw, key.value), 200, 'the next request succeeds');
  t.equal(newSeen(), 1, 'with the new secret');
});

t.test('disabled by the operator: a rotation leaves it disabled', async (t) => {
  const { gw, key, path, newSeen } = await setup(t, (res) => answer(res, 200));
  t.equal((await gw.api('POST', `${path}/disable`, { body: { reason: 'upstream answered 401' } })).status, 200);
  const rotated = await rotate(t, gw, path);
  t.match(rotated, { state: 'disabled', enabled: false, disabled_reason: 'upstream answered 401' }, 'even with a reason that reads like a verdict');
  t.not(await chat(gw, key.value), 200, 'no credential to use');
  t.equal(newSeen(), 0, 'the new secret is not tried');
});

t.test('rows stored before disabled_by existed: a verdict reason re-enables, an operator reason stays', async (t) => {
  const { gw, key, path, newSeen } = await setup(t, (res) => answer(res, 401));
  t.equal(await chat(gw, key.value), 401);
  const file = join(gw.dataDir, 'config.json');
  const legacy = (reason: string) => {
    const data = JSON.parse(readFileSync(file, 'utf8'));
    for (const c of data.credentials) {
      delete c.disabled_by;
      c.disabled_reason = reason;
    }
    writeFileSync(file, JSON.stringify(data));
  };
  await gw.stop();
  legacy('disabled_by_operator');
  await gw.restart();
  t.equal((await rotate(t, gw, path)).state, 'disabled', "the operator's disable stays");
  await gw.stop();
  legacy('upstream answered 401');
  await gw.restart();
  // A second rotation needs another secret; the first one already holds NEW.
  gw.clock.advance(1000);
  const back = await gw.api('PATCH', path, { body: { fields: { api_key: `${NEW}x` } } });
  t.equal(back.status, 200);
  t.equal(back.json.data.state, 'active', "the verdict's disable is lifted");
  t.equal(newSeen(), 0);
});
