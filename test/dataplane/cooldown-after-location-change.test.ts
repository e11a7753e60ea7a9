import { createServer } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream, type Upstream } from './helpers/data-plane-harness.ts';
import { chatBody } from './helpers/dataplane-scenarios.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A cooldown says the upstream could not be reached (or failed) at one address, through one
// proxy: a new address or proxy for the credential ends it. A disable by a 401/403 is about the
// key and stays.

const MODEL = 'chat-model';
const KEY = 'sk-location-0000000001';

function answer(res: ServerResponse, status: number): void {
  writeJson(res, status, status === 200 ? { id: 'c', object: 'chat.completion', choices: [] } : { error: { message: `upstream says ${status}` } });
}

async function upstreamAnswering(t: Test, status: number): Promise<Upstream> {
  const upstream = await startUpstream((_req, res) => answer(res, status));
  t.teardown(() => upstream.close());
  return upstream;
}

/** An address on 127.0.0.1 where nothing listens: connections are refused. */
async function closedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function chat(gw: Gateway, keyValue: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
  return { status: res.status, text: await res.text() };
}

async function setup(t: Test, body: Record<string, unknown>, credentials = KEY) {
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], body);
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials });
  t.equal(imported.status, 200, 'imported');
  const ids = (imported.json.data.created as { id: number }[]).map((c) => c.id) as [number, ...number[]];
  const key = await seedAccessKey(gw);
  const credential = async (id = ids[0]) => (await gw.api('GET', `/api/groups/${groupId}/credentials/${id}`)).json.data;
  return { gw, groupId, ids, key, credential };
}

/** Puts every credential of the data directory in a cooldown of an hour, as a failing upstream would. */
async function coolDownAll(gw: Gateway): Promise<void> {
  await gw.stop();
  const file = join(gw.dataDir, 'config.json');
  const data = JSON.parse(readFileSync(file, 'utf8'));
  for (const c of data.credentials) c.cooldown_until = new Date(gw.clock.now + 3_600_000).toISOString();
  writeFileSync(file, JSON.stringify(data));
  await gw.restart();
}

t.test("the README's quickstart: an unreachable base_url, then the Group's base_url fixed", async (t) => {
  const upstream = await upstreamAnswering(t, 200);
  const { gw, groupId, key, credential } = await setup(t, { base_url: await closedAddress() });
  const first = await chat(gw, key.value);
  t.equal(first.status, 502);
  t.match(first.text, /upstream_unreachable/);
  t.equal((await credential()).state, 'cooldown', 'the credential cools down');
  const before = (await credential()).revision;
  const put = await gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { base_url: upstream.url } });
  t.equal(put.status, 200);
  t.match(await credential(), { state: 'active', cooldown_until: null, revision: before + 1 }, 'the new address ends the cooldown');
  t.equal((await chat(gw, key.value)).status, 200, 'the next call reaches the new address');
  t.equal(upstream.requests.length, 1);
});

t.test('settings that leave the address as it was leave the cooldown', async (t) => {
  const { gw, groupId, credential } = await setup(t, { base_url: 'http://127.0.0.1:9' });
  await coolDownAll(gw);
  t.equal((await gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { base_url: 'http://127.0.0.1:9', priority: 3 } })).status, 200);
  t.equal((await credential()).state, 'cooldown');
});

t.test('a disable by a 401 stays when the base_url changes', async (t) => {
  const refusing = await upstreamAnswering(t, 401);
  const other = await upstreamAnswering(t, 200);
  const { gw, groupId, key, credential } = await setup(t, { base_url: refusing.url });
  t.equal((await chat(gw, key.value)).status, 401);
  t.equal((await credential()).state, 'disabled');
  t.equal((await gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { base_url: other.url } })).status, 200);
  t.match(await credential(), { state: 'disabled', enabled: false }, 'a new address does not make a wrong key right');
  t.not((await chat(gw, key.value)).status, 200);
  t.equal(other.requests.length, 0, 'the disabled credential is not tried');
});

t.test("the Group's proxy_url: credentials without a proxy of their own", async (t) => {
  const { gw, groupId, ids, credential } = await setup(t, { base_url: 'http://127.0.0.1:9' }, `${KEY}\nsk-location-0000000002`);
  t.equal((await gw.api('PATCH', `/api/groups/${groupId}/credentials/${ids[1]!}`, { body: { proxy_url: 'http://127.0.0.1:8' } })).status, 200);
  await coolDownAll(gw);
  t.equal((await gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { proxy_url: 'http://127.0.0.1:7' } })).status, 200);
  t.equal((await credential(ids[0])).state, 'active', 'one that goes through the Group proxy');
  t.equal((await credential(ids[1]!)).state, 'cooldown', 'one with its own proxy still goes the way that failed');
});

t.test('the global proxy_url: credentials that go through it, not those with a proxy of their own or their Group\'s', async (t) => {
  const { gw, groupId, ids, credential } = await setup(t, { base_url: 'http://127.0.0.1:9' }, `${KEY}\nsk-location-0000000002`);
  const proxied = await seedGroup(gw, ['other-model'], { base_url: 'http://127.0.0.1:9', proxy_url: 'http://127.0.0.1:6' });
  const otherImport = await gw.create(`/api/groups/${proxied}/credentials/import`, { credentials: 'sk-location-0000000003' });
  const otherId = (otherImport.json.data.created as { id: number }[])[0]!.id;
  t.equal((await gw.api('PATCH', `/api/groups/${groupId}/credentials/${ids[1]!}`, { body: { proxy_url: 'http://127.0.0.1:8' } })).status, 200);
  await coolDownAll(gw);
  t.equal((await gw.api('PUT', '/api/settings', { body: { proxy_url: 'http://127.0.0.1:7' } })).status, 200);
  t.equal((await credential(ids[0])).state, 'active', 'one that goes through the global proxy');
  t.equal((await credential(ids[1]!)).state, 'cooldown', 'one with its own proxy');
  t.equal((await gw.api('GET', `/api/groups/${proxied}/credentials/${otherId}`)).json.data.state, 'cooldown', "one that goes through its Group's proxy");
});

t.test("the Group's base_url does not concern a credential with an address of its own", async (t) => {
  const { gw, groupId, credential } = await setup(t, { channel: 'ch32', base_url: 'http://127.0.0.1:9' });
  t.equal((await credential()).fields.base_url, 'http://127.0.0.1:9', 'the credential was given its own base_url');
  await coolDownAll(gw);
  t.equal((await gw.api('PUT', `/api/groups/${groupId}/settings`, { body: { base_url: 'http://127.0.0.1:10' } })).status, 200);
  t.equal((await credential()).state, 'cooldown');
});

t.test("a credential's own proxy_url or address changed on PATCH", async (t) => {
  const { gw, groupId, ids, credential } = await setup(t, { channel: 'ch32', base_url: 'http://127.0.0.1:9' }, `${KEY}\nsk-location-0000000002`);
  await coolDownAll(gw);
  const patch = (id: number, body: unknown) => gw.api('PATCH', `/api/groups/${groupId}/credentials/${id}`, { body });
  t.equal((await patch(ids[0], { name: 'renamed' })).json.data.state, 'cooldown', 'a rename leaves it');
  t.equal((await patch(ids[0], { proxy_url: 'http://127.0.0.1:8' })).json.data.state, 'active', 'a new proxy ends it');
  t.equal((await patch(ids[1]!, { fields: { api_key: 'sk-location-0000000002', base_url: 'http://127.0.0.1:10' } })).json.data.state, 'active', 'a new base_url ends it');
  t.equal((await credential(ids[1]!)).fields.base_url, 'http://127.0.0.1:10');
});

t.test("a disable by a 401 stays when the credential's own address changes, and goes when its key does", async (t) => {
  const refusing = await upstreamAnswering(t, 401);
  const { gw, groupId, key, credential } = await setup(t, { channel: 'ch32', base_url: refusing.url });
  const path = `/api/groups/${groupId}/credentials/${(await credential()).id as number}`;
  // ch32 serves chat completions as ch02 does.
  const refused = await chat(gw, key.value);
  t.equal(refused.status, 401, refused.text);
  t.equal((await credential()).state, 'disabled');
  gw.clock.advance(1000);
  t.match((await gw.api('PATCH', path, { body: { fields: { api_key: KEY, base_url: 'http://127.0.0.1:10' } } })).json.data, { state: 'disabled', enabled: false, fields: { base_url: 'http://127.0.0.1:10' } }, 'a new address alone');
  t.match((await gw.api('PATCH', path, { body: { fields: { api_key: 'sk-location-0000000003' } } })).json.data, { state: 'active', enabled: true }, 'a new key');
});
