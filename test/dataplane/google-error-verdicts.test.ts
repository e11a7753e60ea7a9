import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';

// Google's error answers (the generate style) say in their body whether they are about the key:
// an ErrorInfo reason that condemns it disables it (400 API_KEY_INVALID for a revoked or expired
// key), a bare 401/403 about a file, cached content or tuned model the request named is the
// client's own answer, and RetryInfo's retryDelay is the cooldown when no header gives one.

function googleError(code: number, status: string, message: string, details: unknown[] = []) {
  return JSON.stringify({ error: { code, message, status, details } });
}
const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } });
const retryInfo = (retryDelay: string) => ({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay });

const FILE_DENIED = googleError(403, 'PERMISSION_DENIED', 'You do not have permission to access the File notmine or it may not exist.');
const KEY_INVALID = googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [errorInfo('API_KEY_INVALID')]);

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
  res.end(body);
}

function generateOk(res: ServerResponse): void {
  send(res, 200, JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 } }));
}

interface CredentialRow {
  id: number;
  state: string;
  disabled_reason: string | null;
  cooldown_until: string | null;
}

async function setup(t: Test, secrets: string[], respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void, channel = 'ch15', protocols = ['x-generate', 'x-embeddings']) {
  const upstream = await startUpstream(respond);
  t.teardown(() => upstream.close());
  const gw: Gateway = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  const { group, credentials } = await seedGroup(gw.server.store, { channel, baseUrl: upstream.url, models: [{ external: 'team-gen', upstream: 'vendor-gen' }], secrets });
  const { keyValue } = await createKey(gw.server.store, { protocols });
  const listed = async () => {
    const res = await gw.api('GET', `/api/groups/${group.id}/credentials`);
    const rows = (res.json as { data: CredentialRow[] }).data;
    return (secret: string) => rows.find((c) => c.id === credentials[secrets.indexOf(secret)]!.id)!;
  };
  const generate = (contents: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1beta/models/team-gen:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ contents }) });
  return { upstream, gw, keyValue, listed, generate };
}

const fileContents = [{ role: 'user', parts: [{ fileData: { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/notmine', mimeType: 'image/png' } }, { text: 'describe' }] }];

t.test('a 403 PERMISSION_DENIED about a file goes to the client as sent: one upstream request, every credential still active', async (t) => {
  const secrets = ['sk-a', 'sk-b', 'sk-c'];
  const { upstream, listed, generate } = await setup(t, secrets, (req, res) => (req.body.toString().includes('files/notmine') ? send(res, 403, FILE_DENIED) : generateOk(res)));
  const denied = await generate(fileContents);
  t.equal(denied.status, 403);
  t.same(await denied.json(), JSON.parse(FILE_DENIED), 'the upstream body, as sent');
  t.equal(upstream.requests.length, 1, 'no other credential was tried');
  const state = await listed();
  for (const s of secrets) t.match(state(s), { state: 'active', disabled_reason: null }, `${s} stays active`);
  const next = await generate('hello');
  t.equal(next.status, 200, 'the next request is served');
});

t.test('a 401 UNAUTHENTICATED that an API key cannot call (CREDENTIALS_MISSING, as for a tuned model) goes to the client, the credential kept', async (t) => {
  const body = googleError(401, 'UNAUTHENTICATED', 'API keys are not supported by this API. Expected OAuth2 access token or other authentication credentials that assert a principal.', [errorInfo('CREDENTIALS_MISSING')]);
  const { upstream, listed, generate } = await setup(t, ['sk-a', 'sk-b'], (_req, res) => send(res, 401, body));
  const res = await generate('hello');
  t.equal(res.status, 401);
  t.equal(upstream.requests.length, 1);
  const state = await listed();
  t.equal(state('sk-a').state, 'active');
  t.equal(state('sk-b').state, 'active');
});

t.test('400 API_KEY_INVALID disables the credential with its reason and fails over to the next, which answers 200', async (t) => {
  const { upstream, listed, generate } = await setup(t, ['sk-revoked', 'sk-good'], (req, res) => (secretOf(req) === 'sk-revoked' ? send(res, 400, KEY_INVALID) : generateOk(res)));
  // Equal weights take turns: the revoked key is tried first in one of the first two requests.
  const statuses = [(await generate('x')).status, (await generate('y')).status, (await generate('z')).status];
  t.same(statuses, [200, 200, 200], 'every request is served');
  t.same(upstream.requests.filter((r) => secretOf(r) === 'sk-revoked').length, 1, 'the revoked key is tried once, then no more');
  const state = await listed();
  t.match(state('sk-revoked'), { state: 'disabled', disabled_reason: 'upstream answered 400 API_KEY_INVALID' });
  t.equal(state('sk-good').state, 'active');
});

t.test('API_KEY_INVALID fails over on embedContent too, which is not replay_safe: the key was refused before processing', async (t) => {
  const { upstream, gw, keyValue, listed } = await setup(t, ['sk-revoked', 'sk-good'], (req, res) => (secretOf(req) === 'sk-revoked' ? send(res, 400, KEY_INVALID) : send(res, 200, JSON.stringify({ embedding: { values: [0.1] } }))));
  const embed = () => fetch(`${gw.url}/v1beta/models/team-gen:embedContent`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: JSON.stringify({ content: { parts: [{ text: 'x' }] } }) });
  t.same([(await embed()).status, (await embed()).status], [200, 200]);
  t.equal(upstream.requests.filter((r) => secretOf(r) === 'sk-revoked').length, 1);
  t.equal((await listed())('sk-revoked').state, 'disabled');
});

t.test('a referrer restriction is the key\'s when the client sent no Referer, the client\'s own when it did', async (t) => {
  const blocked = googleError(403, 'PERMISSION_DENIED', 'Requests from referer https://elsewhere.example/ are blocked.', [errorInfo('API_KEY_HTTP_REFERRER_BLOCKED')]);
  const { upstream, listed, generate } = await setup(t, ['sk-a'], (_req, res) => send(res, 403, blocked));
  const theirs = await generate('x', { referer: 'https://elsewhere.example/' });
  t.equal(theirs.status, 403);
  t.equal((await listed())('sk-a').state, 'active', 'the client named the referrer: the key is kept');
  const keys = await generate('x');
  t.equal(keys.status, 403);
  t.match((await listed())('sk-a'), { state: 'disabled', disabled_reason: 'upstream answered 403 API_KEY_HTTP_REFERRER_BLOCKED' });
  t.equal(upstream.requests.length, 2);
});

t.test('429 RetryInfo.retryDelay is the cooldown when no Retry-After is given; a Retry-After header still wins', async (t) => {
  const exhausted = (delay: string) => googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota.', [errorInfo('RATE_LIMIT_EXCEEDED'), retryInfo(delay)]);
  const { listed, generate } = await setup(t, ['sk-hour', 'sk-frac', 'sk-header'], (req, res) => {
    const secret = secretOf(req);
    if (secret === 'sk-hour') return send(res, 429, exhausted('3600s'));
    if (secret === 'sk-frac') return send(res, 429, exhausted('45.8s'));
    return send(res, 429, exhausted('3600s'), { 'retry-after': '7' });
  });
  const before = Date.now();
  const res = await generate('x');
  const after = Date.now();
  t.equal(res.status, 429, 'the last credential\'s answer, as sent');
  const state = await listed();
  const within = (secret: string, seconds: number) => {
    const until = Date.parse(state(secret).cooldown_until ?? '');
    t.equal(state(secret).state, 'cooldown', `${secret} cools down`);
    t.ok(until >= before + seconds * 1000 - 1000 && until <= after + seconds * 1000 + 1000, `${secret}: cooldown_until ${state(secret).cooldown_until} is ${seconds} s away`);
  };
  within('sk-hour', 3600);
  within('sk-frac', 45.8);
  within('sk-header', 7);
});

t.test('a client\'s own OAuth token never goes upstream, and 401 ACCESS_TOKEN_EXPIRED (about a token, never the gateway\'s key) goes to the client with no verdict', async (t) => {
  const expired = googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', [errorInfo('ACCESS_TOKEN_EXPIRED')]);
  const { upstream, gw, keyValue, listed } = await setup(t, ['sk-a', 'sk-b'], (_req, res) => send(res, 401, expired));
  const res = await fetch(`${gw.url}/v1beta/models/team-gen:generateContent?access_token=ya29.client-token&alt=json&oauth_token=ya29.other`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: JSON.stringify({ contents: 'hello' }) });
  t.equal(res.status, 401);
  t.same(await res.json(), JSON.parse(expired), 'the upstream body, as sent');
  t.equal(upstream.requests.length, 1, 'no other credential was tried');
  const url = upstream.requests[0]!.url;
  t.notMatch(url, /access_token|oauth_token|ya29/, `the token stayed with the gateway: ${url}`);
  t.match(url, /[?&]alt=json(&|$)/, 'other parameters are forwarded');
  const state = await listed();
  t.match(state('sk-a'), { state: 'active', disabled_reason: null, cooldown_until: null });
  t.match(state('sk-b'), { state: 'active', disabled_reason: null, cooldown_until: null });
});

// Stream requests' errors come framed as their stream is: a JSON-array stream (no `alt=sse`)
// sends the object as the array's one element; an `alt=sse` one, as Google sends it, the object
// typed text/event-stream. Either is judged by its body, as the plain object is.
const OK_CANDIDATE = JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }] });
const STREAM_FRAMINGS = [
  { name: "a JSON-array stream's error, the array's one element", query: '', error: (body: string) => `[${body}\n]`, ok: `[${OK_CANDIDATE}\n]`, headers: undefined },
  { name: "an alt=sse stream's error, typed text/event-stream", query: '?alt=sse', error: (body: string) => body, ok: `data: ${OK_CANDIDATE}\n\n`, headers: { 'content-type': 'text/event-stream' } },
];

for (const framing of STREAM_FRAMINGS) {
  t.test(`${framing.name}: judged by its body as the plain object is`, async (t) => {
    const { upstream, gw, keyValue, listed } = await setup(t, ['sk-revoked', 'sk-good', 'sk-other'], (req, res) => {
      if (req.body.toString().includes('files/notmine')) return send(res, 403, framing.error(FILE_DENIED), framing.headers);
      if (secretOf(req) === 'sk-revoked') return send(res, 400, framing.error(KEY_INVALID), framing.headers);
      send(res, 200, framing.ok, framing.headers);
    });
    const stream = (contents: unknown) => fetch(`${gw.url}/v1beta/models/team-gen:streamGenerateContent${framing.query}`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: JSON.stringify({ contents }) });
    const denied = await stream(fileContents);
    t.equal(denied.status, 403);
    t.same(await denied.json(), JSON.parse(framing.error(FILE_DENIED)), 'the upstream body, as sent');
    t.equal(upstream.requests.length, 1, 'a file that is not the key\'s: no other credential was tried');
    let state = await listed();
    for (const s of ['sk-revoked', 'sk-good', 'sk-other']) t.match(state(s), { state: 'active', disabled_reason: null }, `${s} stays active`);
    // Equal weights take turns: the revoked key is met within three requests.
    for (let i = 0; i < 3; i++) t.equal((await stream('hello')).status, 200, 'served, past the revoked key');
    state = await listed();
    t.match(state('sk-revoked'), { state: 'disabled', disabled_reason: 'upstream answered 400 API_KEY_INVALID' });
  });
}

// Key refusals Google sends with no ErrorInfo, only their message (googleapis/python-genai#1764,
// poenl/gemini-api#8): without it read they look like a refusal about a file, and the dead key stays.
for (const message of ['Your API key was reported as leaked. Please use another API key.', 'Your project has been denied access. Please contact support.']) {
  t.test(`a 403 PERMISSION_DENIED "${message}" disables the key and the next serves`, async (t) => {
    const body = JSON.stringify({ error: { code: 403, message, status: 'PERMISSION_DENIED' } });
    const { upstream, listed, generate } = await setup(t, ['sk-leaked', 'sk-good'], (req, res) => (secretOf(req) === 'sk-leaked' ? send(res, 403, body) : generateOk(res)));
    // Equal weights take turns: the leaked key is met within two requests.
    t.same([(await generate('x')).status, (await generate('y')).status, (await generate('z')).status], [200, 200, 200], 'every request is served');
    t.equal(upstream.requests.filter((r) => secretOf(r) === 'sk-leaked').length, 1, 'the leaked key is tried once, then no more');
    const state = await listed();
    t.match(state('sk-leaked'), { state: 'disabled', disabled_reason: 'upstream answered 403 PERMISSION_DENIED' });
    t.equal(state('sk-good').state, 'active');
  });
}

// A Google-shaped refusal on a chat completions route: the credential is disabled as that
// route's status rules say, and the other serves.
const CHAT_ROUTE_REFUSALS = [
  { name: 'another wire style keeps its status rules: a Google-shaped 403 to a chat completions route still disables', channel: 'ch02', status: 403, body: FILE_DENIED, reason: 'upstream answered 403' },
  // As continuedev/continue#8516 shows it: the object of the generate style, in a one-element array.
  { name: "Gemini's OpenAI-compatible endpoint refusing a key 400 in Google's shape (an array's one element) disables it on a chat route", channel: 'ch20', status: 400, body: `[${KEY_INVALID}\n]`, reason: 'upstream answered 400 API_KEY_INVALID' },
];

for (const c of CHAT_ROUTE_REFUSALS) {
  t.test(c.name, async (t) => {
    const upstream = await startUpstream((req, res) => (secretOf(req) === 'sk-a' ? send(res, c.status, c.body) : send(res, 200, completionJson('vendor-gen'))));
    t.teardown(() => upstream.close());
    const gw: Gateway = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
    const { group, credentials } = await seedGroup(gw.server.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: 'team-gen', upstream: 'vendor-gen' }], secrets: ['sk-a', 'sk-b'] });
    const { keyValue } = await createKey(gw.server.store, { protocols: ['x-completions'] });
    const chat = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-gen') });
    // Equal weights take turns: sk-a is met within two requests, and tried no more.
    t.same([(await chat()).status, (await chat()).status, (await chat()).status], [200, 200, 200], 'failed over to the other credential');
    t.equal(upstream.requests.filter((r) => secretOf(r) === 'sk-a').length, 1);
    const rows = ((await gw.api('GET', `/api/groups/${group.id}/credentials`)).json as { data: CredentialRow[] }).data;
    t.match(rows.find((cr) => cr.id === credentials[0]!.id), { state: 'disabled', disabled_reason: c.reason });
  });
}

// Google refuses the gateway's egress address 400 FAILED_PRECONDITION (poenl/gemini-api#4): another
// key's own proxy may go out elsewhere, so the next is tried and none is blamed, as for an OpenAI 403 region refusal.
const LOCATION = googleError(400, 'FAILED_PRECONDITION', 'User location is not supported for the API use.');

t.test('a 400 FAILED_PRECONDITION about the user location moves on to the next key with no verdict', async (t) => {
  const { upstream, listed, generate } = await setup(t, ['sk-here', 'sk-proxied'], (req, res) => (secretOf(req) === 'sk-here' ? send(res, 400, LOCATION) : generateOk(res)));
  // Equal weights take turns: the refused key is met within two requests.
  t.same([(await generate('x')).status, (await generate('y')).status], [200, 200], 'served by the key the location allows');
  t.ok(upstream.requests.some((r) => secretOf(r) === 'sk-here'), 'the refused key was asked');
  const state = await listed();
  for (const s of ['sk-here', 'sk-proxied']) t.match(state(s), { state: 'active', disabled_reason: null, cooldown_until: null }, `${s} stays active`);
});

t.test('a 400 FAILED_PRECONDITION about the user location from every key goes to the client as sent, and blames none', async (t) => {
  const { upstream, listed, generate } = await setup(t, ['sk-a', 'sk-b'], (_req, res) => send(res, 400, LOCATION));
  const res = await generate('x');
  t.equal(res.status, 400);
  t.same(await res.json(), JSON.parse(LOCATION), 'the upstream body, as sent');
  t.same(new Set(upstream.requests.map(secretOf)), new Set(['sk-a', 'sk-b']), 'each key was asked');
  const state = await listed();
  for (const s of ['sk-a', 'sk-b']) t.match(state(s), { state: 'active', disabled_reason: null, cooldown_until: null }, `${s} stays active`);
});
