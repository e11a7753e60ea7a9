import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startDataPlane, startUpstream, type Gateway, type RecordedUpstreamRequest, type Upstream } from './helpers/data-plane-harness.ts';
import { maskedForClients } from '../../src/dataplane/mask-upstream-secret.ts';
import { DEFAULT_SETTINGS } from '../../src/store/default-settings.ts';
import { chatBody, closedPortUrl, completionJson, createKey, credentialView, seedGroup, sseBlocks, waitForLog } from './helpers/dataplane-scenarios.ts';

// Credential pools and failover (issue 4 item 4): 429/5xx/connection failures cool a
// credential down (honouring Retry-After) and move on; 401/403 disable it with the reason;
// the next Group by priority follows; operations that are not safe to replay move on only
// when the upstream provably rejected before processing. Every attempt is in the log record.

type Behaviour = (res: ServerResponse, req: RecordedUpstreamRequest) => void;

const ok: Behaviour = (res, req) => {
  const body = completionJson(String(JSON.parse(req.body.toString() || '{}').model));
  // Names the credential that served without echoing its secret, which the gateway would mask.
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': `ok-${secretOf(req).replace('sk-', 'cred-')}` });
  res.end(body);
};
const status =
  (code: number, headers: Record<string, string> = {}): Behaviour =>
  (res) => {
    const body = JSON.stringify({ error: { message: `upstream says ${code}`, type: 'upstream_error', code: `u${code}` } });
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(body);
  };
const hangUp: Behaviour = (res) => res.socket?.destroy();

function secretOf(req: RecordedUpstreamRequest): string {
  const auth = String(req.headers.authorization ?? req.headers['x-api-key'] ?? req.headers['x-goog-api-key'] ?? '');
  return auth.replace(/^Bearer /, '');
}

/** A substitute upstream whose answer depends on the credential it receives. */
async function upstreamBySecret(t: Test, behaviours: Record<string, Behaviour>): Promise<Upstream & { secrets(): string[] }> {
  const upstream = await startUpstream((req, res) => (behaviours[secretOf(req)] ?? ok)(res, req));
  t.teardown(() => upstream.close());
  return Object.assign(upstream, { secrets: () => upstream.requests.map(secretOf) });
}

async function gateway(t: Test): Promise<Gateway> {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  return gw;
}

const MODELS = [{ external: 'team-chat', upstream: 'vendor-chat' }];

async function chat(gw: Gateway, keyValue: string): Promise<{ res: Response; text: string }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  return { res, text: await res.text() };
}

function isoWithin(t: Test, value: string | null, from: number, to: number, what: string): void {
  const at = value === null ? NaN : Date.parse(value);
  t.ok(at >= from && at <= to, `${what}: ${value} within [${new Date(from).toISOString()}, ${new Date(to).toISOString()}]`);
}

t.test('429 with Retry-After: the next credential serves, the first cools down for that long and recovers by itself', async (t) => {
  const behaviours: Record<string, Behaviour> = { 'sk-a': status(429, { 'retry-after': '120' }) };
  const upstream = await upstreamBySecret(t, behaviours);
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const [a, b] = credentials as [typeof credentials[0], typeof credentials[0]];
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  const before = Date.now();
  const first = await chat(gw, keyValue);
  const after = Date.now();
  t.equal(first.res.status, 200, 'the request succeeds through the second credential');
  t.equal(first.res.headers.get('request-id'), 'ok-cred-b');
  t.same(upstream.secrets(), ['sk-a', 'sk-b']);
  const record = await waitForLog(gw, first.res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 200,
    credential_id: String(b.id),
    attempt_count: 2,
    attempts: [
      { credential_id: String(a.id), group_id: String(group.id), status: 429, error_code: 'upstream_429' },
      { credential_id: String(b.id), group_id: String(group.id), status: 200, error_code: null },
    ],
  });
  t.equal(record.attempts.length, 2, 'every attempt listed, no more');

  const cooled = await credentialView(gw.store, group.id, a.id);
  t.equal(cooled.state, 'cooldown');
  isoWithin(t, cooled.cooldown_until, before + 119_000, after + 121_000, 'cooldown_until honours retry-after: 120');
  t.equal((await credentialView(gw.store, group.id, b.id)).state, 'active');

  const second = await chat(gw, keyValue);
  t.equal(second.res.status, 200);
  t.same(upstream.secrets().slice(2), ['sk-b'], 'a cooling credential is skipped');

  // Time passes: cooldown_until is in the past, so the credential is usable again without
  // anyone resetting it. (A longer cooldown stands against a shorter one: the past one is set
  // on a credential without one.)
  delete behaviours['sk-a'];
  const past = new Date(Date.now() - 1000).toISOString();
  await gw.store.credentials.setState(group.id, a.id, { to: 'active' });
  await gw.store.credentials.setState(group.id, a.id, { to: 'cooldown', until: past });
  const lapsed = await credentialView(gw.store, group.id, a.id);
  t.equal(lapsed.cooldown_until, past, 'the lapsed cooldown is still stored');
  t.equal(lapsed.state, 'active', 'the view derives active once cooldown_until has passed');
  for (let i = 0; i < 2; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  t.ok(upstream.secrets().slice(3).includes('sk-a'), 'the recovered credential is used again', { used: upstream.secrets() });
});

t.test('Retry-After as an HTTP date is honoured', async (t) => {
  const until = new Date(Math.ceil((Date.now() + 300_000) / 1000) * 1000);
  const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': until.toUTCString() }) });
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 200);
  const cooled = await credentialView(gw.store, group.id, credentials[0]!.id);
  t.equal(cooled.state, 'cooldown');
  isoWithin(t, cooled.cooldown_until, until.getTime() - 2000, until.getTime() + 2000, 'cooldown_until is the Retry-After date');
});

for (const retryAfter of ['99999999999999', new Date(Date.now() + 5 * 365 * 86_400_000).toUTCString()]) {
  t.test(`a Retry-After far ahead (${retryAfter}) cools the credential down for a day at most`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': retryAfter }) });
    const gw = await gateway(t);
    const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
    const before = Date.now();
    t.equal((await chat(gw, keyValue)).res.status, 200, 'the next credential serves');
    const after = Date.now();
    const cooled = await credentialView(gw.store, group.id, credentials[0]!.id);
    t.equal(cooled.state, 'cooldown');
    isoWithin(t, cooled.cooldown_until, before + 86_400_000 - 1000, after + 86_400_000 + 1000, 'cooldown_until is a day ahead');
  });
}

for (const retryAfter of ['-5', '1 2', '-1', 'soon']) {
  t.test(`a Retry-After that is neither seconds nor a date (${retryAfter}) cools the credential down for the configured time`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': retryAfter }) });
    const gw = await gateway(t);
    const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
    const cooldownMs = DEFAULT_SETTINGS.credential_cooldown_seconds * 1000;
    const before = Date.now();
    t.equal((await chat(gw, keyValue)).res.status, 200, 'the next credential serves');
    const after = Date.now();
    const cooled = await credentialView(gw.store, group.id, credentials[0]!.id);
    t.equal(cooled.state, 'cooldown');
    isoWithin(t, cooled.cooldown_until, before + cooldownMs - 1000, after + cooldownMs + 1000, 'cooldown_until is the configured cooldown ahead');
  });
}

for (const code of [401, 403]) {
  t.test(`${code}: the credential is disabled with the reason and not used again`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(code) });
    const gw = await gateway(t);
    const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
    const first = await chat(gw, keyValue);
    t.equal(first.res.status, 200);
    const disabled = await credentialView(gw.store, group.id, credentials[0]!.id);
    t.equal(disabled.state, 'disabled');
    t.equal(disabled.enabled, false);
    t.match(disabled.disabled_reason, new RegExp(String(code)), 'the reason names the status');
    for (let i = 0; i < 2; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
    t.same(upstream.secrets(), ['sk-a', 'sk-b', 'sk-b', 'sk-b']);
    const record = await waitForLog(gw, first.res.headers.get('x-switchyard-request-id'));
    t.match(record.attempts, [{ status: code, error_code: `upstream_${code}` }, { status: 200 }]);
  });
}

t.test('5xx: the next credential, then the next Group by priority', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(500), 'sk-b': status(503) });
  const gw = await gateway(t);
  // Created lowest priority first, so that creation order cannot stand in for priority.
  const low = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-d'], priority: 1 });
  const middle = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-c'], priority: 5 });
  const high = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'], priority: 10 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const before = Date.now();
  const { res } = await chat(gw, keyValue);
  const after = Date.now();
  t.equal(res.status, 200);
  t.same(upstream.secrets(), ['sk-a', 'sk-b', 'sk-c'], 'high priority Group first, then the next one; the lowest is not needed');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    group_id: String(middle.group.id),
    credential_id: String(middle.credentials[0]!.id),
    attempt_count: 3,
    attempts: [
      { group_id: String(high.group.id), credential_id: String(high.credentials[0]!.id), status: 500, error_code: 'upstream_500' },
      { group_id: String(high.group.id), credential_id: String(high.credentials[1]!.id), status: 503, error_code: 'upstream_503' },
      { group_id: String(middle.group.id), credential_id: String(middle.credentials[0]!.id), status: 200, error_code: null },
    ],
  });
  // A 5xx without a hint is the upstream's health: server_error_cooldown_seconds, not the key's credential_cooldown_seconds.
  const cooldownSeconds = (await gw.store.settings.get()).server_error_cooldown_seconds;
  for (const c of high.credentials) {
    const view = await credentialView(gw.store, high.group.id, c.id);
    t.equal(view.state, 'cooldown', `credential ${c.id} cools down after a 5xx`);
    isoWithin(t, view.cooldown_until, before + cooldownSeconds * 1000 - 1000, after + cooldownSeconds * 1000 + 1000, 'default cooldown without Retry-After');
  }
  t.equal((await credentialView(gw.store, low.group.id, low.credentials[0]!.id)).state, 'active');
});

t.test("connection refused at the Group's address: its other credentials there are passed over for the next Group, and tried by later requests", async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const dead = await seedGroup(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a', 'sk-b'], priority: 10 });
  const live = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-c'], priority: 5 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const tried: string[] = [];
  for (let i = 0; i < 2; i++) {
    const { res } = await chat(gw, keyValue);
    t.equal(res.status, 200);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, {
      group_id: String(live.group.id),
      attempt_count: 2,
      attempts: [
        { group_id: String(dead.group.id), status: null, error_code: 'upstream_connect_failed' },
        { group_id: String(live.group.id), status: 200 },
      ],
    });
    tried.push(record.attempts[0]!.credential_id!);
  }
  t.same(upstream.secrets(), ['sk-c', 'sk-c']);
  // The first request cooled its credential down: the second tried the other one.
  t.same(tried.sort(), dead.credentials.map((c) => String(c.id)).sort(), 'each request tried one credential of the dead Group, a different one');
  for (const c of dead.credentials) t.equal((await credentialView(gw.store, dead.group.id, c.id)).state, 'cooldown', 'a connection failure cools the credential tried down');
});

t.test("the Group's address refusing connections: the first request goes on to the backup Group at once, not spending its attempts on the Group's other credentials", async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const dead = await seedGroup(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a', 'sk-b', 'sk-c'], priority: 10 });
  const backup = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-d'], priority: 1 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 200, 'served by the backup Group');
  t.same(upstream.secrets(), ['sk-d']);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, group_id: String(backup.group.id), credential_id: String(backup.credentials[0]!.id), attempt_count: 2 });
  t.same(
    record.attempts.map((a) => [a.group_id, a.status, a.error_code]),
    [
      [String(dead.group.id), null, 'upstream_connect_failed'],
      [String(backup.group.id), 200, null],
    ],
  );
  const states = await Promise.all(dead.credentials.map(async (c) => (await credentialView(gw.store, dead.group.id, c.id)).state));
  t.same(states.sort(), ['active', 'active', 'cooldown'], 'the credential tried cools down, the ones passed over do not');
});

t.test('connection refused at a credential\'s own address: the next credential of the Group is tried', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  // ch32's credentials carry their own base URL: each of these at a closed port of its own, the Group's address healthy.
  const own = await seedGroup(gw.store, { channel: 'ch32', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'], priority: 10 });
  for (const [i, c] of own.credentials.entries()) await gw.store.credentials.update(own.group.id, c.id, { values: { api_key: `sk-${'ab'[i]}`, base_url: await closedPortUrl() }, secretFields: ['api_key'] });
  const live = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-c'], priority: 5 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 200);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.same(
    record.attempts.map((a) => [a.group_id, a.status, a.error_code]),
    [
      [String(own.group.id), null, 'upstream_connect_failed'],
      [String(own.group.id), null, 'upstream_connect_failed'],
      [String(live.group.id), 200, null],
    ],
  );
});

t.test("the Group's address refusing connections: a credential of the Group with an address of its own is still tried", async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  // ch32's credentials carry a base URL, seeded as the Group's (at the Group's address): the last one's is changed to a healthy one.
  const mixed = await seedGroup(gw.store, { channel: 'ch32', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a', 'sk-b', 'sk-c'] });
  const [first, second, own] = mixed.credentials;
  await gw.store.credentials.update(mixed.group.id, own!.id, { values: { api_key: 'sk-c', base_url: upstream.url }, secretFields: ['api_key'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 200);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  // A fresh rotation starts at the first: refused there, the second (at the same address) is passed over.
  t.same(
    record.attempts.map((a) => [a.credential_id, a.error_code]),
    [
      [String(first!.id), 'upstream_connect_failed'],
      [String(own!.id), null],
    ],
    `one attempt at the Group's address, not ${second!.id}'s too, then the credential with its own`,
  );
});

t.test('attempts stop at max_attempts_per_request and the last upstream error is passed on', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(500), 'sk-b': status(502), 'sk-c': status(503) });
  const gw = await gateway(t);
  await gw.store.settings.save({ max_attempts_per_request: 2 });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b', 'sk-c'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res, text } = await chat(gw, keyValue);
  t.equal(upstream.requests.length, 2);
  t.equal(res.status, 502);
  t.match(JSON.parse(text), { error: { code: 'u502' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.attempt_count, 2);
  t.equal(record.status, 502);
  // The answer passed on is recorded on its attempt as the kept ones are, whichever path sent it.
  t.same(record.attempts.map((a) => [a.status, a.error_code]), [[500, 'upstream_500'], [502, 'upstream_502']]);
});

t.test('a single credential whose error answer is passed on: its attempt says what it got', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(400) });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 400);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 400, error_code: 'upstream_400' });
  t.same(record.attempts.map((a) => [a.status, a.error_code]), [[400, 'upstream_400']]);
});

t.test('a client that leaves while a later attempt waits is recorded 499 on that attempt\'s credential, not as the earlier error it never got', async (t) => {
  let arrived: () => void = () => {};
  const second = new Promise<void>((resolve) => (arrived = resolve));
  const upstream = await upstreamBySecret(t, {
    'sk-a': status(500),
    'sk-b': () => arrived(),
  });
  const gw = await gateway(t);
  const { credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-completions'] });
  const client = new AbortController();
  const answer = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: client.signal, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') }).catch((err: Error) => err);
  await second;
  client.abort();
  t.type(await answer, Error, 'the client got no answer');
  const record = await eventuallyRecord(gw, key.id);
  t.match(record, { status: 499, error_code: 'client_closed', client_aborted: true, credential_id: String(credentials[1]!.id) });
  t.same(record.attempts.map((a) => [a.credential_id, a.status, a.error_code]), [[String(credentials[0]!.id), 500, 'upstream_500'], [String(credentials[1]!.id), null, 'client_closed']]);
});

/** The one record of a key's request, once written. */
async function eventuallyRecord(gw: Gateway, accessKeyId: number) {
  for (let i = 0; i < 200; i++) {
    await gw.logs.flush();
    const [item] = (await gw.logs.list({ access_key_id: accessKeyId }, { limit: 2 })).items;
    if (item) return (await gw.logs.get(item.request_id))!;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no record was written');
}

t.test('every credential cooling down: 503 no_available_credential, nothing sent upstream', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': '600' }) });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const first = await chat(gw, keyValue);
  t.equal(first.res.status, 429, "the upstream's 429 once failover is exhausted");
  t.equal(first.res.headers.get('retry-after'), '600');
  const second = await chat(gw, keyValue);
  t.equal(second.res.status, 503);
  t.match(JSON.parse(second.text), { error: { code: 'no_available_credential' } });
  t.equal(upstream.requests.length, 1, 'the second request reached no upstream');
  // Ten minutes is too long for an SDK to sleep on before retrying: it is told not to.
  t.equal(second.res.headers.get('x-should-retry'), 'false');
  const wait = Number(second.res.headers.get('retry-after'));
  t.ok(wait > 0 && wait <= 600, `retry-after ${wait}: the wait is still given`);
});

t.test('every credential cooling down for the default cooldown: the 503 tells the SDKs not to retry', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(429) });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 429);
  const second = await chat(gw, keyValue);
  t.equal(second.res.status, 503);
  // A 429's default credential_cooldown_seconds (60) is beyond the 30 s an SDK is left to wait.
  t.equal(second.res.headers.get('x-should-retry'), 'false');
  t.ok(Number(second.res.headers.get('retry-after-ms')) > 30_000, 'the wait is still given');
});

t.test('every credential cooling down without a hint: the 503 says when the first recovers, by the cooldown setting', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(429) });
  const gw = await gateway(t);
  const cooldownSeconds = 7;
  await gw.store.settings.save({ credential_cooldown_seconds: cooldownSeconds });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const before = Date.now();
  const first = await chat(gw, keyValue);
  t.equal(first.res.status, 429);
  const second = await chat(gw, keyValue);
  const answered = Date.now();
  t.equal(second.res.status, 503);
  t.match(JSON.parse(second.text), { error: { code: 'no_available_credential' } });
  const waitMs = Number(second.res.headers.get('retry-after-ms'));
  // The cooldown started between `before` and the second answer, and lasts cooldownSeconds.
  t.ok(waitMs > cooldownSeconds * 1000 - (answered - before) - 1 && waitMs <= cooldownSeconds * 1000, `retry-after-ms ${waitMs} within the cooldown left`);
  t.equal(second.res.headers.get('retry-after'), String(Math.max(1, Math.ceil(waitMs / 1000))), 'Retry-After: the same wait in whole seconds, rounded up');
  t.equal(second.res.headers.get('x-should-retry'), null, 'a wait of seconds is left to the SDK to retry after');
  t.equal(upstream.requests.length, 1, 'the second request reached no upstream');
});

t.test('every credential disabled: the 503 no_available_credential carries no wait, and x-should-retry: false', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(401) });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 401);
  const second = await chat(gw, keyValue);
  t.equal(second.res.status, 503);
  t.equal(second.res.headers.get('retry-after'), null);
  t.equal(second.res.headers.get('retry-after-ms'), null);
  t.equal(second.res.headers.get('x-should-retry'), 'false', 'nothing recovers by itself: not worth a retry');
});

// Operations that are not safe to replay (embeddings, image generation): retried only when the
// upstream provably rejected before processing (429, 401/403, or no connection at all).
const UNSAFE = [
  { op: 'embeddings', protocol: 'x-chat-embeddings', channel: 'ch03', path: '/v1/embeddings', body: { model: 'team-chat', input: 'hello' } },
  { op: 'images-generations', protocol: 'x-images', channel: 'ch09', path: '/v1/images/generations', body: { model: 'team-chat', prompt: 'a lighthouse' } },
] as const;

for (const u of UNSAFE) {
  const call = async (gw: Gateway, keyValue: string) => {
    const res = await fetch(`${gw.url}${u.path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify(u.body) });
    return { res, text: await res.text() };
  };

  t.test(`${u.op} (not replay safe): a 500 is not retried`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(500) });
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-c'], priority: -1 });
    const { keyValue } = await createKey(gw.store, { protocols: [u.protocol] });
    const { res, text } = await call(gw, keyValue);
    t.equal(res.status, 500, "the upstream's 500 comes back");
    t.match(JSON.parse(text), { error: { code: 'u500' } });
    t.same(upstream.secrets(), ['sk-a'], 'no second attempt');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 500, attempt_count: 1, attempts: [{ status: 500 }] });
  });

  t.test(`${u.op} (not replay safe): a connection lost after sending is not retried`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': hangUp });
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.store, { protocols: [u.protocol] });
    const { res, text } = await call(gw, keyValue);
    t.equal(res.status, 502);
    t.match(JSON.parse(text), { error: { code: 'upstream_unreachable' } });
    t.same(upstream.secrets(), ['sk-a'], 'the upstream may have processed it: no second attempt');
  });

  t.test(`${u.op} (not replay safe): a 429, then a connection lost after sending: the client gets the lost connection, not the 429`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': '1' }), 'sk-b': hangUp });
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b', 'sk-c'] });
    const { keyValue } = await createKey(gw.store, { protocols: [u.protocol] });
    const { res, text } = await call(gw, keyValue);
    t.equal(res.status, 502, 'the second attempt may have run: not "rate limited"');
    t.match(JSON.parse(text), { error: { code: 'upstream_unreachable' } });
    t.same(upstream.secrets(), ['sk-a', 'sk-b'], 'no third attempt');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 502, error_code: 'upstream_unreachable', credential_id: String(record.attempts[1]!.credential_id), attempts: [{ status: 429 }, { status: null, error_code: 'upstream_connection_lost' }] });
  });

  t.test(`${u.op} (not replay safe): a 429 is retried on the next credential`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(429, { 'retry-after': '30' }) });
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.store, { protocols: [u.protocol] });
    const { res } = await call(gw, keyValue);
    t.equal(res.status, 200);
    t.same(upstream.secrets(), ['sk-a', 'sk-b']);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { attempt_count: 2, attempts: [{ status: 429 }, { status: 200 }] });
  });

  t.test(`${u.op} (not replay safe): a refused connection is retried in the next Group`, async (t) => {
    const upstream = await upstreamBySecret(t, {});
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: u.channel, baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a'], priority: 10 });
    await seedGroup(gw.store, { channel: u.channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-b'], priority: 1 });
    const { keyValue } = await createKey(gw.store, { protocols: [u.protocol] });
    const { res } = await call(gw, keyValue);
    t.equal(res.status, 200);
    t.same(upstream.secrets(), ['sk-b']);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { attempt_count: 2, attempts: [{ status: null, error_code: 'upstream_connect_failed' }, { status: 200 }] });
  });
}

t.test('chat completions (replay safe): a connection lost after sending is retried', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': hangUp });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 200);
  t.same(upstream.secrets(), ['sk-a', 'sk-b']);
});

// Failover only while nothing has been sent to the client (issue 4 item 4): an answer that
// breaks off after its first bytes reached the client is not sent again to another credential.

const FIRST_EVENT = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'first-event' } }] })}\n\n`;

/** Answers 200, writes `head`, then breaks the connection off. */
const breakAfter =
  (contentType: string, head: string, headers: Record<string, string> = {}): Behaviour =>
  (res) => {
    res.writeHead(200, { 'content-type': contentType, ...headers });
    res.write(head, () => setTimeout(() => res.socket?.destroy(), 50));
  };

t.test('a stream that breaks after its first event reached the client is not sent to the next credential', async (t) => {
  const broken = breakAfter('text/event-stream', FIRST_EVENT);
  // Both break: whichever credential goes first, a second attempt would show.
  const upstream = await upstreamBySecret(t, { 'sk-a': broken, 'sk-b': broken });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat', true) });
  t.equal(res.status, 200);
  const text = await res.text();
  t.ok(text.startsWith(FIRST_EVENT), 'the first event reached the client as sent');
  const blocks = sseBlocks(text.slice(FIRST_EVENT.length));
  t.equal(blocks.length, 1, 'then one more event', { text });
  t.match(JSON.parse((blocks[0] ?? '').replace(/^data: /, '')), { error: { code: 'upstream_stream_broken' } }, 'the error event');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, attempt_count: 1, error_code: 'upstream_stream_broken' });
  // Read once the record is written, when the request is over: no later attempt.
  t.equal(upstream.secrets().length, 1, 'one credential only');
});

t.test('a plain JSON answer that breaks partway is not sent to the next credential: the client gets a broken body', async (t) => {
  const head = '{"id":"chatcmpl-1","choices":[';
  // A length the body never reaches.
  const broken = breakAfter('application/json', head, { 'content-length': '500' });
  const upstream = await upstreamBySecret(t, { 'sk-a': broken, 'sk-b': broken });
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  t.equal(res.status, 200);
  await t.rejects(res.text(), 'the body breaks off');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, attempt_count: 1, error_code: 'upstream_stream_broken' });
  // Read once the record is written, when the request is over: no later attempt.
  t.equal(upstream.secrets().length, 1, 'one credential only');
});

t.test('within a Group, credentials of equal standing take turns (round-robin)', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b', 'sk-c'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  for (let i = 0; i < 6; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  const counts = upstream.secrets().reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
  t.same(counts, { 'sk-a': 2, 'sk-b': 2, 'sk-c': 2 });
});

t.test('within a Group, credentials share traffic by their weights', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  await gw.store.credentials.update(group.id, credentials[0]!.id, { weight: 3 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  for (let i = 0; i < 8; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  const counts = upstream.secrets().reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
  t.same(counts, { 'sk-a': 6, 'sk-b': 2 }, 'weight 3 against weight 1');
});

t.test('every attempt failing to connect: 502 in the client protocol, and the log still lists every attempt', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const dead = await seedGroup(gw.store, { channel: 'ch14', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a', 'sk-b'], priority: 10 });
  const dead2 = await seedGroup(gw.store, { channel: 'ch14', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-c'], priority: 5 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-messages'] });
  const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': keyValue, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', max_tokens: 5, messages: [] }) });
  t.equal(res.status, 502);
  t.match(await res.json(), { type: 'error', error: { type: 'api_error', code: 'upstream_unreachable' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 502,
    error_code: 'upstream_unreachable',
    // The first Group's other credential is at the same address: passed over.
    attempt_count: 2,
    attempts: [
      { group_id: String(dead.group.id), credential_id: String(dead.credentials[0]!.id), status: null, error_code: 'upstream_connect_failed' },
      { group_id: String(dead2.group.id), credential_id: String(dead2.credentials[0]!.id), status: null, error_code: 'upstream_connect_failed' },
    ],
    group_id: String(dead2.group.id),
    channel: 'ch14',
    credential_id: String(dead2.credentials[0]!.id),
  });
  t.equal(upstream.requests.length, 0);
});

t.test('a non-replay-safe request whose connection was lost: the log lists the attempt and names the credential', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': hangUp });
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-chat-embeddings'] });
  const res = await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', input: 'x' }) });
  t.equal(res.status, 502);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 502,
    error_code: 'upstream_unreachable',
    attempt_count: 1,
    attempts: [{ credential_id: String(credentials[0]!.id), status: null, error_code: 'upstream_connection_lost' }],
    group_id: String(group.id),
    channel: 'ch03',
    credential_id: String(credentials[0]!.id),
  });
});

t.test('failover exhausted: the log names the Group, channel and credential whose answer came back', async (t) => {
  const upstream = await upstreamBySecret(t, { 'sk-a': status(429), 'sk-b': status(429, { 'retry-after': '5' }) });
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const { res } = await chat(gw, keyValue);
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '5', "the last answer's headers");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 429,
    error_code: 'upstream_429',
    attempt_count: 2,
    group_id: String(group.id),
    channel: 'ch02',
    credential_id: String(credentials[1]!.id),
    upstream_model: 'vendor-chat',
    route_mode: 'N',
  });
  // The kept answer was sent to the client: the time to its first byte is recorded.
  t.type(record.timings.ttfb_ms, 'number', 'time to first byte recorded');
  t.ok(record.timings.ttfb_ms! >= 0 && record.timings.ttfb_ms! <= record.timings.duration_ms, 'within the request');
});

// ---- which Groups are tried (plan-candidates) --------------------------------------------

t.test('a disabled Group and a Group the key cannot see are skipped even at a higher priority', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const disabled = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-disabled'], priority: 30 });
  await gw.store.groups.update(disabled.group.id, { enabled: false });
  const hidden = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-hidden'], priority: 20 });
  const visible = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-visible'], priority: 10 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'], groups: [disabled.group.id, visible.group.id] });
  for (let i = 0; i < 3; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  t.same(upstream.secrets(), ['sk-visible', 'sk-visible', 'sk-visible']);
  t.ok(hidden.group.id, 'the hidden Group exists');
});

t.test('a Group whose route is converted is skipped in favour of a native one at lower priority', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: MODELS, secrets: ['sk-converted'], priority: 10 }); // CC is C on ch14
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-native'], priority: 1 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 200);
  t.same(upstream.secrets(), ['sk-native']);
});

t.test('at equal priority a Group of weight 0 is used only when the weighted ones fail', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-zero'], weight: 0 });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-weighted'], weight: 5 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  for (let i = 0; i < 5; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  t.same(upstream.secrets(), Array(5).fill('sk-weighted'));
});

t.test('at equal priority and weight, traffic spreads over the Groups', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-left'] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-right'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  // All 30 on one side happens with probability 2^-29.
  for (let i = 0; i < 30; i++) t.equal((await chat(gw, keyValue)).res.status, 200);
  t.same(new Set(upstream.secrets()), new Set(['sk-left', 'sk-right']));
});

t.test('a credential whose value is replaced is used with the new value at once', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-old'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 200);
  await gw.store.credentials.update(group.id, credentials[0]!.id, { values: { api_key: 'sk-new' }, secretFields: ['api_key'] });
  t.equal((await chat(gw, keyValue)).res.status, 200);
  t.same(upstream.secrets(), ['sk-old', 'sk-new']);
});

t.test('a base URL with a path prefix and a trailing slash keeps the prefix', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: `${upstream.url}/relay/openai/`, models: MODELS, secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal((await chat(gw, keyValue)).res.status, 200);
  t.equal(upstream.requests[0]?.url, '/relay/openai/v1/chat/completions');
});

t.test('a base URL that ends with a version segment, as vendors document it, stands for the path\'s own', async (t) => {
  const upstream = await upstreamBySecret(t, {});
  // As pasted from a vendor's docs: the version the gateway would otherwise add a second time, or another one.
  for (const [base, expected] of [
    ['/v1', '/v1/chat/completions'],
    ['/api/paas/v4/', '/api/paas/v4/chat/completions'],
    ['/compatible-mode/v1', '/compatible-mode/v1/chat/completions'],
    ['/v1beta1/openai', '/v1beta1/openai/v1/chat/completions'],
    // Prefixes that merely start like a version.
    ['/v2ray', '/v2ray/v1/chat/completions'],
    ['/v3api/', '/v3api/v1/chat/completions'],
  ] as const) {
    const gw = await gateway(t);
    await seedGroup(gw.store, { channel: 'ch02', baseUrl: `${upstream.url}${base}`, models: MODELS, secrets: ['sk-a'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
    t.equal((await chat(gw, keyValue)).res.status, 200, base);
    t.equal(upstream.requests.at(-1)?.url, expected, `${base}: only its last segment counts, and only when it is a version`);
  }
});

t.test('responses resource calls go back to the Group and credential that created the response', async (t) => {
  const make = (name: string) =>
    startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.method === 'POST' && req.url === '/v1/responses' ? { id: `resp_${name}`, object: 'response' } : { id: req.url, served_by: name }));
    });
  const left = await make('left');
  const right = await make('right');
  const gw = await gateway(t);
  t.teardown(async () => {
    await left.close();
    await right.close();
  });
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: left.url, models: MODELS, secrets: ['sk-left'] });
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: right.url, models: MODELS, secrets: ['sk-right'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
  const created = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'team-chat', input: 'hi' }) });
  const { id } = (await created.json()) as { id: string };
  const owner = id === 'resp_left' ? left : right;
  const other = owner === left ? right : left;
  for (let i = 0; i < 8; i++) {
    const res = await fetch(`${gw.url}/v1/responses/${id}`, { headers });
    t.equal(res.status, 200);
    await res.text();
  }
  const input = await fetch(`${gw.url}/v1/responses/${id}/input_items`, { headers });
  await input.text();
  t.equal(owner.requests.length, 10, 'create, 8 retrievals and input items all on the owning upstream');
  t.equal(other.requests.length, 0);
});

t.test('a continuation (previous_response_id) goes to the credential that created the response', async (t) => {
  // As the upstream stores responses per key: a continuation sent with another key is not found.
  const creators = new Map<string, string>();
  let created = 0;
  const upstream = await startUpstream((req, res) => {
    const key = String(req.headers.authorization);
    const previous = (JSON.parse(req.body.toString() || '{}') as { previous_response_id?: string }).previous_response_id;
    if (previous !== undefined && creators.get(previous) !== key) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end('{"error":{"message":"Previous response not found.","type":"invalid_request_error","code":"previous_response_not_found"}}');
    }
    const id = `resp_${++created}`;
    creators.set(id, key);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id, object: 'response', status: 'completed' }));
  });
  t.teardown(() => upstream.close());
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: MODELS, secrets: ['sk-one', 'sk-two'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
  let previous: string | undefined;
  for (let turn = 0; turn < 5; turn++) {
    const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'team-chat', input: `turn ${turn}`, ...(previous ? { previous_response_id: previous } : {}) }) });
    const body = (await res.json()) as { id: string };
    t.equal(res.status, 200, `turn ${turn} answered`, { body });
    previous = body.id;
  }
  t.equal(new Set(creators.values()).size, 1, 'the whole chain stayed on the key that began it');
});

/**
 * A responses upstream that stores responses per key (another key's lookup is not found), and
 * answers the next request of `failNext(secret, ...)` made with that key with the given status.
 */
async function responsesPerKey(t: Test): Promise<Upstream & { ownerOf(id: string): string | undefined; failNext(secret: string, behaviour: Behaviour): void }> {
  const owners = new Map<string, string>();
  let created = 0;
  let failing: { secret: string; behaviour: Behaviour } | undefined;
  const notFound = (res: ServerResponse, message: string) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', code: null } }));
  };
  const upstream = await startUpstream((req, res) => {
    const secret = secretOf(req);
    if (failing?.secret === secret) {
      const { behaviour } = failing;
      failing = undefined;
      return behaviour(res, req);
    }
    const stored = /^\/v1\/responses\/([^/]+)/.exec(req.url)?.[1];
    const previous = (JSON.parse(req.body.toString() || '{}') as { previous_response_id?: string }).previous_response_id;
    const about = stored ?? previous;
    if (about !== undefined && owners.get(about) !== secret) return notFound(res, `No response found with id '${about}'.`);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (stored === undefined) {
      const id = `resp_${++created}`;
      owners.set(id, secret);
      return void res.end(JSON.stringify({ id, object: 'response', status: 'completed' }));
    }
    res.end(JSON.stringify(req.method === 'DELETE' ? { id: stored, object: 'response.deleted', deleted: true } : { id: stored, object: 'response', status: req.url.endsWith('/cancel') ? 'cancelled' : 'completed' }));
  });
  t.teardown(() => upstream.close());
  return Object.assign(upstream, { ownerOf: (id: string) => owners.get(id), failNext: (secret: string, behaviour: Behaviour) => void (failing = { secret, behaviour }) });
}

/** Every request about a stored response: its retrieval, cancellation, deletion, input items and a continuation of it. */
const ABOUT_STORED = [
  { name: 'retrieve', method: 'GET', path: (id: string) => `/v1/responses/${id}`, body: undefined },
  { name: 'cancel', method: 'POST', path: (id: string) => `/v1/responses/${id}/cancel`, body: undefined },
  { name: 'delete', method: 'DELETE', path: (id: string) => `/v1/responses/${id}`, body: undefined },
  { name: 'input items', method: 'GET', path: (id: string) => `/v1/responses/${id}/input_items`, body: undefined },
  { name: 'continuation', method: 'POST', path: () => '/v1/responses', body: (id: string) => ({ model: 'team-chat', input: 'next', previous_response_id: id }) },
] as const;

async function storedResponseScenario(t: Test) {
  const upstream = await responsesPerKey(t);
  const gw = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: MODELS, secrets: ['sk-one', 'sk-two'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
  const send = (method: string, path: string, body?: unknown) => fetch(`${gw.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const created = await send('POST', '/v1/responses', { model: 'team-chat', input: 'hi' });
  const { id } = (await created.json()) as { id: string };
  const owner = upstream.ownerOf(id)!;
  return { upstream, gw, send, id, owner, other: owner === 'sk-one' ? 'sk-two' : 'sk-one' };
}

for (const about of ABOUT_STORED) {
  t.test(`${about.name} of a stored response whose credential answers 429: that 429 and its retry-after, no other credential`, async (t) => {
    const { upstream, send, id, owner } = await storedResponseScenario(t);
    const before = upstream.requests.length;
    upstream.failNext(owner, status(429, { 'retry-after': '7' }));
    const res = await send(about.method, about.path(id), about.body?.(id));
    t.equal(res.status, 429, "the owner's answer, not another key's 404");
    t.equal(res.headers.get('retry-after'), '7');
    t.match(await res.json(), { error: { code: 'u429', message: 'upstream says 429' } });
    t.same(upstream.requests.slice(before).map(secretOf), [owner], 'one attempt, with the key that holds the response');
  });
}

t.test('a stored response whose credential answers 500 on retrieval: that 500, no other credential', async (t) => {
  const { upstream, send, id, owner } = await storedResponseScenario(t);
  const before = upstream.requests.length;
  upstream.failNext(owner, status(500));
  const res = await send('GET', `/v1/responses/${id}`);
  t.equal(res.status, 500);
  t.match(await res.json(), { error: { code: 'u500' } });
  t.same(upstream.requests.slice(before).map(secretOf), [owner]);
});

t.test('a stored response whose credential cools down: 503 no_available_credential with its retry hint, never the other key', async (t) => {
  const { upstream, gw, send, id, owner, other } = await storedResponseScenario(t);
  upstream.failNext(owner, status(429, { 'retry-after': '600' }));
  t.equal((await send('GET', `/v1/responses/${id}`)).status, 429, 'the owner cools down for 600 s');
  const before = upstream.requests.length;
  for (const about of ABOUT_STORED) {
    const res = await send(about.method, about.path(id), about.body?.(id));
    t.equal(res.status, 503, `${about.name}: refused, not sent to another key`);
    const body = (await res.json()) as { error: { code: string } };
    t.equal(body.error.code, 'no_available_credential');
    const wait = Number(res.headers.get('retry-after'));
    t.ok(wait > 0 && wait <= 600, `${about.name}: retry-after ${wait} within the owner's cooldown`);
    t.ok(Number(res.headers.get('retry-after-ms')) > 0, `${about.name}: retry-after-ms too`);
  }
  t.equal(upstream.requests.length, before, 'nothing reached the upstream');
  const fresh = await send('POST', '/v1/responses', { model: 'team-chat', input: 'new' });
  t.equal(fresh.status, 200, 'a request about no stored response is still served');
  t.same(upstream.requests.slice(before).map(secretOf), [other], 'by the other key');
  const record = await waitForLog(gw, fresh.headers.get('x-switchyard-request-id'));
  t.equal(record.status, 200);
});

t.test("a stored response whose Group was deleted: 503 no_available_credential, never another Group", async (t) => {
  const holder = await responsesPerKey(t);
  const fallback = await responsesPerKey(t);
  const gw = await gateway(t);
  const { group } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: holder.url, models: MODELS, secrets: ['sk-one'], priority: 1 });
  const { group: other } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: fallback.url, models: MODELS, secrets: ['sk-two'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
  const created = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'team-chat', input: 'hi' }) });
  const { id } = (await created.json()) as { id: string };
  t.equal(holder.ownerOf(id), 'sk-one', 'created in the Group of higher priority');
  await gw.store.groups.delete(group.id);
  for (const about of ABOUT_STORED) {
    const res = await fetch(`${gw.url}${about.path(id)}`, { method: about.method, headers, ...(about.body ? { body: JSON.stringify(about.body(id)) } : {}) });
    t.equal(res.status, 503, `${about.name}: refused`);
    t.equal(res.headers.get('x-should-retry'), 'false', `${about.name}: a deleted Group does not come back: no SDK retry`);
    t.match(await res.json(), { error: { code: 'no_available_credential' } });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.not(record.group_id, String(other.id), `${about.name}: the record names no other Group`);
  }
  t.equal(fallback.requests.length, 0, 'the other Group was never asked');
});

for (const [change, apply] of [
  ['disabled', (gw: Gateway, id: number) => gw.store.groups.update(id, { enabled: false })],
  ['deleted', (gw: Gateway, id: number) => gw.store.groups.delete(id)],
] as const) {
  t.test(`a stored response whose only Group was ${change}: 503 no_available_credential, not a not-found`, async (t) => {
    const holder = await responsesPerKey(t);
    const gw = await gateway(t);
    const { group } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: holder.url, models: MODELS, secrets: ['sk-one'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
    const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
    const created = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'team-chat', input: 'hi' }) });
    const { id } = (await created.json()) as { id: string };
    await apply(gw, group.id);
    for (const about of ABOUT_STORED) {
      const res = await fetch(`${gw.url}${about.path(id)}`, { method: about.method, headers, ...(about.body ? { body: JSON.stringify(about.body(id)) } : {}) });
      t.equal(res.status, 503, `${about.name}: refused as unavailable`);
      t.match(await res.json(), { error: { code: 'no_available_credential' } });
    }
  });
}

// ---- passthrough answers are about the path, not the credential ---------------------------
// Note 3: "Passthrough does not guarantee upstream implementation; upstream error statuses are
// preserved." An unimplemented extension path (501) or one the project may not use (403) must
// not take the credential away from every other request.

for (const passthrough of [
  { name: 'namespace path answered 501', method: 'POST', path: '/v1/responses/vendor-ext/run', body: {}, code: 501 },
  { name: 'namespace path answered 403', method: 'GET', path: '/v1/responses/vendor-ext/state', body: undefined, code: 403 },
  { name: 'alpha search answered 403', method: 'POST', path: '/v1/alpha/search', body: { model: 'team-chat', query: 'q' }, code: 403 },
  { name: 'alpha search answered 501', method: 'POST', path: '/v1/alpha/search', body: { model: 'team-chat', query: 'q' }, code: 501 },
  // A code that elsewhere moves on to the next key (not the key's fault) changes nothing here.
  { name: 'alpha search answered 403 model_not_found', method: 'POST', path: '/v1/alpha/search', body: { model: 'team-chat', query: 'q' }, code: 403, upstreamBody: '{"error":{"message":"no access to model","code":"model_not_found"}}' },
] as { name: string; method: string; path: string; body: object | undefined; code: number; upstreamBody?: string }[]) {
  t.test(`${passthrough.name}: preserved, and the credential stays usable`, async (t) => {
    const upstream = await startUpstream((req, res) => {
      const isPassthrough = req.url !== '/v1/responses';
      res.writeHead(isPassthrough ? passthrough.code : 200, { 'content-type': 'application/json' });
      res.end(isPassthrough ? answer : '{"id":"resp_1","object":"response"}');
    });
    const answer = passthrough.upstreamBody ?? `{"error":{"message":"upstream ${passthrough.code}"}}`;
    t.teardown(() => upstream.close());
    const gw = await gateway(t);
    const { group, credentials } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: MODELS, secrets: ['sk-one', 'sk-two'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
    const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
    const res = await fetch(`${gw.url}${passthrough.path}`, { method: passthrough.method, headers, ...(passthrough.body ? { body: JSON.stringify(passthrough.body) } : {}) });
    t.equal(res.status, passthrough.code, 'the upstream status comes back');
    t.equal(await res.text(), answer);
    t.equal(upstream.requests.length, 1, 'not retried: another credential would get the same answer');
    for (const c of credentials) t.equal((await credentialView(gw.store, group.id, c.id)).state, 'active', 'neither credential is disabled nor cooling down');
    const create = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'team-chat', input: 'hi' }) });
    t.equal(create.status, 200, 'ordinary traffic still flows through the credential');
  });
}

// The first attempt of a request runs apart from the failover loop once its credential's
// secret is cached (in forwardNative itself), so each of these first warms the cache with
// successful requests, then fails the next request's first attempt.

/** A substitute upstream answering `ok`, except the one request after `failNext(behaviour)`, which gets that behaviour. */
async function upstreamFailingNext(t: Test, fresh: boolean): Promise<Upstream & { secrets(): string[]; failNext(behaviour: Behaviour): void }> {
  let pending: Behaviour | undefined;
  const upstream = await startUpstream((req, res) => {
    const behaviour = pending ?? ok;
    pending = undefined;
    // Each answer closes its connection: the failing request comes on a new one, not a stale pooled one.
    if (fresh) res.setHeader('connection', 'close');
    behaviour(res, req);
  });
  t.teardown(() => upstream.close());
  return Object.assign(upstream, { secrets: () => upstream.requests.map(secretOf), failNext: (behaviour: Behaviour) => void (pending = behaviour) });
}

async function warmed(t: Test, channel: string, protocol: string, call: (gw: Gateway, keyValue: string) => Promise<Response>, fresh = false) {
  const upstream = await upstreamFailingNext(t, fresh);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: [protocol] });
  for (let i = 0; i < 2; i++) t.equal((await call(gw, keyValue)).status, 200, 'warm-up request');
  return { upstream, gw, keyValue, ...seeded, warm: upstream.requests.length };
}

const chatCall = async (gw: Gateway, keyValue: string) => (await chat(gw, keyValue)).res;
const embeddingsCall = (gw: Gateway, keyValue: string) =>
  fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', input: 'x' }) });

t.test('secrets cached: a first attempt whose connection is lost goes on to the other credential (replay safe)', async (t) => {
  const { upstream, gw, keyValue, credentials, warm } = await warmed(t, 'ch02', 'x-completions', chatCall, true);
  upstream.failNext(hangUp);
  const res = await chatCall(gw, keyValue);
  t.equal(res.status, 200);
  const [first, second] = upstream.secrets().slice(warm);
  t.equal(upstream.requests.length, warm + 2, 'the failed attempt is not sent twice');
  t.not(first, second, 'the second attempt uses the other credential');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  const failed = credentials[first === 'sk-a' ? 0 : 1]!;
  t.match(record, { attempt_count: 2, attempts: [{ credential_id: String(failed.id), status: null, error_code: 'upstream_connection_lost' }, { status: 200 }] });
});

t.test('secrets cached: a non-replay-safe first attempt whose connection is lost is not sent again', async (t) => {
  const { upstream, gw, keyValue, warm } = await warmed(t, 'ch03', 'x-chat-embeddings', embeddingsCall, true);
  upstream.failNext(hangUp);
  const res = await embeddingsCall(gw, keyValue);
  t.equal(res.status, 502);
  t.equal(upstream.requests.length, warm + 1, 'one upstream request');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'upstream_unreachable', attempt_count: 1, attempts: [{ status: null, error_code: 'upstream_connection_lost' }] });
});

t.test('secrets cached: a first attempt answered 429 cools its credential down and the other one serves', async (t) => {
  const { upstream, gw, keyValue, group, credentials, warm } = await warmed(t, 'ch02', 'x-completions', chatCall);
  upstream.failNext(status(429, { 'retry-after': '60' }));
  const res = await chatCall(gw, keyValue);
  t.equal(res.status, 200);
  const [first, second] = upstream.secrets().slice(warm);
  t.not(first, second);
  const cooled = credentials[first === 'sk-a' ? 0 : 1]!;
  t.equal((await credentialView(gw.store, group.id, cooled.id)).state, 'cooldown');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { attempt_count: 2, attempts: [{ credential_id: String(cooled.id), status: 429, error_code: 'upstream_429' }, { status: 200 }] });
});

t.test('secrets cached: an upstream error that names the credential reaches the client with it masked', async (t) => {
  const { upstream, gw, keyValue, warm } = await warmed(t, 'ch02', 'x-completions', chatCall);
  upstream.failNext((res, req) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `invalid request for key ${secretOf(req)}`, type: 'invalid_request_error' } }));
  });
  const { res, text } = await chat(gw, keyValue);
  t.equal(res.status, 400);
  const secret = upstream.secrets()[warm]!;
  t.notMatch(text, secret, 'the upstream secret does not reach the client');
  t.match(text, `invalid request for key ${maskedForClients(secret)}"`, 'it is masked where the upstream wrote it');
});
