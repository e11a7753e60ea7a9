import { readFileSync, writeFileSync } from 'node:fs';
import { request, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startDataPlane, startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, deferred, seedGroup as seedScenarioGroup, withTimeout } from './helpers/dataplane-scenarios.ts';

// A credential's secret rotated (or its state set by hand) while requests are on their way:
// a request whose body was still uploading when the rotation was acknowledged uses the new
// secret, and an upstream's verdict about a secret (or state) replaced since is dropped.

const OLD = 'sk-rotation-old-0000000001';
const NEW = 'sk-rotation-new-0000000002';
const MODEL = 'chat-model';

type Respond = (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>;

function secretOf(req: RecordedUpstreamRequest): string {
  return String(req.headers.authorization ?? '').replace(/^Bearer /, '');
}

function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  const body = status === 200 ? JSON.stringify({ id: 'c', object: 'chat.completion', choices: [] }) : JSON.stringify({ error: { message: `upstream says ${status}` } });
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

/** A gateway (with the data plane, on the hand-moved clock) whose Group has one credential holding OLD. */
async function setup(t: Test, respond: Respond) {
  const upstream = await startUpstream(respond);
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], { base_url: upstream.url });
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: OLD });
  const credentialId = imported.json.data.created[0].id as number;
  const key = await seedAccessKey(gw);
  const path = `/api/groups/${groupId}/credentials/${credentialId}`;
  return { upstream, gw, key, path, secrets: () => upstream.requests.map(secretOf) };
}

async function chat(gw: Gateway, keyValue: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
  await res.text();
  return res.status;
}

/** A chat request that sends the first bytes of its body now and the rest when told. */
function chatWithHeldBody(gw: Gateway, keyValue: string): { finish(): Promise<number> } {
  const body = chatBody(MODEL);
  const url = new URL(`${gw.url}/v1/chat/completions`);
  const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 10));
  return {
    finish: () => {
      req.end(body.slice(10));
      return withTimeout(status, 5000, 'the held request');
    },
  };
}

async function rotate(t: Test, gw: Gateway, path: string): Promise<void> {
  // Another millisecond: the clock's part is the same-millisecond test's alone.
  gw.clock.advance(1000);
  const rotated = await gw.api('PATCH', path, { body: { fields: { api_key: NEW } } });
  t.equal(rotated.status, 200, 'the rotation is acknowledged');
}

t.test('a body still uploading when a rotation is acknowledged: the upstream never sees the old secret, the credential stays enabled', async (t) => {
  let valid = OLD;
  const { gw, key, path, secrets } = await setup(t, (req, res) => answer(res, secretOf(req) === valid ? 200 : 401));
  t.equal(await chat(gw, key.value), 200, 'warm: the old secret is cached');
  const held = chatWithHeldBody(gw, key.value);
  // The gateway has the headers and part of the body, and waits for the rest.
  await new Promise((r) => setTimeout(r, 100));
  await rotate(t, gw, path);
  valid = NEW;
  t.equal(await held.finish(), 200, 'the held request is served');
  t.same(secrets(), [OLD, NEW], 'after the rotation the upstream saw the new secret only');
  t.match((await gw.api('GET', path)).json.data, { enabled: true, state: 'active', disabled_reason: null });
  t.equal(await chat(gw, key.value), 200);
});

t.test('a 401 for the old secret answered after the rotation is acknowledged: dropped, and the next request uses the new secret', async (t) => {
  let valid = OLD;
  const arrived = deferred();
  const release = deferred();
  let hold = false;
  const { gw, key, path, secrets } = await setup(t, async (req, res) => {
    if (hold) {
      hold = false;
      arrived.resolve();
      await release.promise;
    }
    answer(res, secretOf(req) === valid ? 200 : 401);
  });
  t.equal(await chat(gw, key.value), 200);
  hold = true;
  const inFlight = chat(gw, key.value);
  await withTimeout(arrived.promise, 5000, 'the request at the upstream');
  await rotate(t, gw, path);
  valid = NEW;
  release.resolve();
  t.equal(await inFlight, 401, 'the old secret is refused');
  t.match((await gw.api('GET', path)).json.data, { enabled: true, state: 'active', disabled_reason: null }, 'the rotated credential is not disabled');
  t.equal(await chat(gw, key.value), 200, 'the next request succeeds');
  t.same(secrets(), [OLD, OLD, NEW]);
});

t.test('a rotation in the same millisecond as the cached secret: the next request carries the new secret', async (t) => {
  const { gw, key, path, secrets } = await setup(t, (_req, res) => answer(res, 200));
  t.equal(await chat(gw, key.value), 200);
  // The clock is not moved: the credential's updated_at stays what it was.
  const rotated = await gw.api('PATCH', path, { body: { fields: { api_key: NEW } } });
  t.equal(rotated.status, 200);
  t.equal(await chat(gw, key.value), 200);
  t.same(secrets(), [OLD, NEW]);
});

t.test('a hand enable after a cooldown is not undone by a late verdict of a request that started before it', async (t) => {
  const arrived = deferred();
  const release = deferred();
  let calls = 0;
  const { gw, key, path } = await setup(t, async (_req, res) => {
    calls++;
    if (calls === 1) {
      arrived.resolve();
      await release.promise;
    }
    // The first (held) and the second request are refused for a minute; later ones are served.
    answer(res, calls <= 2 ? 429 : 200, calls <= 2 ? { 'retry-after': '60' } : {});
  });
  const early = chat(gw, key.value);
  await withTimeout(arrived.promise, 5000, 'the early request at the upstream');
  t.equal(await chat(gw, key.value), 429, 'a second request cools the credential down');
  t.match((await gw.api('GET', path)).json.data, { state: 'cooldown' });
  const enabled = await gw.create(`${path}/enable`);
  t.match(enabled.json.data, { state: 'active', cooldown_until: null }, 'enabled by hand');
  release.resolve();
  // The verdict is applied before the answer is sent.
  t.equal(await early, 429, 'the early request gets its late 429');
  t.match((await gw.api('GET', path)).json.data, { enabled: true, state: 'active', cooldown_until: null }, 'still active');
  t.equal(await chat(gw, key.value), 200, 'and it serves');
});

t.test('a state change expecting a revision that a write queued before it replaces is dropped inside that write', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { group, credentials } = await seedScenarioGroup(gw.store, { channel: 'ch02', baseUrl: 'https://upstream.test', models: [{ external: MODEL, upstream: MODEL }], secrets: [OLD] });
  const seeded = credentials[0]!;
  // Not awaited: the rotation is queued and the verdict after it still sees the old revision in memory.
  const rotation = gw.store.credentials.update(group.id, seeded.id, { values: { api_key: NEW }, secretFields: ['api_key'] });
  const verdict = gw.store.credentials.setState(group.id, seeded.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: seeded.revision });
  const rotated = await rotation;
  t.equal(await verdict, undefined, 'nothing written');
  t.not(rotated?.revision, seeded.revision, 'the rotation moved the revision');
  t.match(await gw.store.credentials.get(group.id, seeded.id), { enabled: true, disabled_reason: null, revision: rotated?.revision });
  const current = await gw.store.credentials.setState(group.id, seeded.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: rotated!.revision });
  t.match(current, { enabled: false, disabled_reason: 'upstream answered 401' }, 'a verdict on the current revision applies');
});

t.test('verdicts on the same revision all hold: a 401 after another request\'s 429 still disables the credential', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { group, credentials } = await seedScenarioGroup(gw.store, { channel: 'ch02', baseUrl: 'https://upstream.test', models: [{ external: MODEL, upstream: MODEL }], secrets: [OLD] });
  const seeded = credentials[0]!;
  // Two requests in flight on the same secret: the first is answered 429, the second 401.
  const cooled = await gw.store.credentials.setState(group.id, seeded.id, { to: 'cooldown', until: new Date(Date.now() + 60_000).toISOString() }, { expectedRevision: seeded.revision });
  t.equal(cooled?.revision, seeded.revision, 'a verdict does not outdate the others on its secret');
  const disabled = await gw.store.credentials.setState(group.id, seeded.id, { to: 'disabled', reason: 'upstream answered 401' }, { expectedRevision: seeded.revision });
  t.match(disabled, { enabled: false, disabled_reason: 'upstream answered 401' }, 'the revoked key is disabled');
});

t.test('a credential stored before revisions existed reads as revision 0, is served, and counts on from there', async (t) => {
  const { gw, key, path, secrets } = await setup(t, (_req, res) => answer(res, 200));
  await gw.stop();
  const file = join(gw.dataDir, 'config.json');
  const stored = JSON.parse(readFileSync(file, 'utf8'));
  for (const c of stored.credentials) delete c.revision;
  writeFileSync(file, JSON.stringify(stored));
  await gw.restart();
  t.match((await gw.api('GET', path)).json.data, { revision: 0, state: 'active' });
  t.equal(await chat(gw, key.value), 200);
  const rotated = await gw.api('PATCH', path, { body: { fields: { api_key: NEW } } });
  t.equal(rotated.json.data.revision, 1);
  t.equal(await chat(gw, key.value), 200);
  t.same(secrets(), [OLD, NEW]);
});

// A key rotated by itself keeps the credential's own location: the Group's base_url fills a
// location only when a credential is created without one (docs/data-plane.md).
for (const { channel, kind, field } of [
  { channel: 'ch32', kind: 'api_key_base_url', field: 'base_url' },
  { channel: 'ch35', kind: 'api_key_custom_endpoint', field: 'endpoint' },
]) {
  t.test(`${channel}: a PATCH of the key alone keeps the credential's own ${field}; the new key goes there, not to the Group's base_url`, async (t) => {
    const own = await startUpstream((_req, res) => answer(res, 200));
    t.teardown(() => own.close());
    const groups = await startUpstream((_req, res) => answer(res, 200));
    t.teardown(() => groups.close());
    const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
    const groupId = await seedGroup(gw, [MODEL], { channel, base_url: groups.url });
    const location = `${own.url}/own-prefix`;
    const connected = await gw.create(`/api/groups/${groupId}/credentials/connect`, { kind, fields: { api_key: OLD, [field]: location } });
    t.equal(connected.status, 201, connected.text);
    const path = `/api/groups/${groupId}/credentials/${connected.json.data.id as number}`;
    const key = await seedAccessKey(gw);

    const rotated = await gw.api('PATCH', path, { body: { fields: { api_key: NEW } } });
    t.equal(rotated.status, 200, rotated.text);
    t.same(rotated.json.data.fields, { [field]: location }, `the PATCH answer shows the ${field} given at connect`);
    t.same((await gw.api('GET', path)).json.data.fields, { [field]: location }, `the stored ${field} is unchanged`);
    t.equal(await chat(gw, key.value), 200);
    t.same(
      own.requests.map((r) => [r.url, secretOf(r)]),
      [['/own-prefix/v1/chat/completions', NEW]],
      `the new key reached the credential's own ${field}`,
    );
    t.equal(groups.requests.length, 0, "the Group's base_url received nothing");
  });
}
