import { mkdtempSync, rmSync } from 'node:fs';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer as createGateway } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startDataPlane, seedRoute } from './helpers/data-plane-harness.ts';
import { closedPortUrl, eventually, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';
import { gatewayWithUndecryptableCredential } from './helpers/undecryptable-credential.ts';
import { startSocks5Server } from './helpers/socks5-server.ts';
import { closeOf, connect, logOf, openSession, realtimeRoute, REALTIME_PATH, startWsUpstream, upgradeAnswer, upgradeStatus, type Refusal } from './helpers/ws-upstream.ts';

t.test('realtime transcription (x-suite, ch03): frames pass both ways with the upstream credential and mapped model', async (t) => {
  const c = { protocol: 'x-suite', channel: 'ch03', path: '/v1/audio/transcriptions/realtime' };
  {
    const upstream = await startWsUpstream();
    const gw = await startDataPlane();
    t.teardown(async () => {
      await gw.close();
      await upstream.close();
    });
    const { keyValue, key } = await seedRoute(gw.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: [c.protocol] });
    const wsUrl = `${gw.url.replace('http', 'ws')}${c.path}?model=voice&key=${keyValue}&access_token=ya29.client&oauth_token=client-token&$key=not-a-key&%24access_token=ya29.other&$oauth_token=t2`;
    const client = await connect(wsUrl);
    const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
    client.send('hello');
    t.equal(await reply, 'echo:hello');
    const req = upstream.seen[0]!;
    t.match(req.url, /model=voice-up/);
    t.notMatch(req.url, /key=/, 'the key query parameter is removed');
    t.notMatch(req.url, /access_token|oauth_token/, 'and the OAuth token parameters a client may send');
    t.notMatch(req.url, /\$|%24/, 'and their `$` aliases, however spelled');
    t.equal(req.headers.authorization, 'Bearer sk-upstream-1');
    client.close(1000);
    await new Promise((r) => client.once('close', r));
    await new Promise((r) => setTimeout(r, 50));
    await gw.logs.flush();
    const page = await gw.logs.list({ access_key_id: key.id }, { limit: 10 });
    t.match(page.items[0], { protocol: c.protocol, status: 101, channel: c.channel, upstream_model: 'voice-up' });
  }
});

t.test('a key in the query after a doubled ?, which the HTTP path reads as `key`, is read and removed on a WebSocket route too', async (t) => {
  const upstream = await startWsUpstream();
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'] });
  const client = await connect(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}??key=${keyValue}&model=voice`);
  const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  client.send('hello');
  t.equal(await reply, 'echo:hello', 'authenticated by the key');
  const seen = upstream.seen[0]!.url ?? '';
  t.notOk(seen.includes(keyValue), 'the client key never reaches the upstream');
  t.match(seen, /model=voice-up/);
  client.close(1000);
  await new Promise((r) => client.once('close', r));
});

// ch10, the only x-live channel, takes OAuth credentials, served once the adapters issue brings the
// authorization flows: here the session is refused, not hung. A session with an API key credential
// runs in websocket-live-session.test.ts. x-live answers in the generate error shape.
async function liveGateway(t: Test) {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const group = await gw.store.groups.create({ name: 'live', channel: 'ch10', base_url: 'http://127.0.0.1:9', models: [{ external: 'voice', upstream: 'v' }] });
  await gw.store.credentials.createMany(group.id, [{ kind: 'oauth_json', values: { oauth_json: '{}' }, secretFields: ['oauth_json'] }]);
  const liveUrl = (model: string, key: string) => `${gw.url.replace('http', 'ws')}/v1/live?model=${model}&key=${key}`;
  return { gw, group, liveUrl };
}

const generateError = (status: number, statusName: string, reason: string) => ({ error: { code: status, message: String, status: statusName, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'switchyard' }] } });

t.test('x-live on ch10 with an OAuth credential is refused with no_available_credential', async (t) => {
  const { gw, group, liveUrl } = await liveGateway(t);
  const { value, record } = await gw.store.accessKeys.create({ name: 'k', protocols: ['x-live'] });
  const answer = await upgradeAnswer(liveUrl('voice', value));
  t.equal(answer.status, 503);
  t.match(JSON.parse(answer.body), generateError(503, 'UNAVAILABLE', 'no_available_credential'));
  t.match(JSON.parse(answer.body).error.message, /need an authorization flow/, 'says why: not disabled or cooling down');
  t.equal(answer.headers['x-should-retry'], 'false', 'no credential recovers by itself');
  const logged = await logOf(gw, record.id, 503);
  t.match(logged, { protocol: 'x-live', operation: 'live', external_model: 'voice', error_code: 'no_available_credential', attempt_count: 0, credential_id: null });
  // As on the HTTP path: the route it would have taken, with no credential.
  t.match(logged, { group_id: String(group.id), channel: 'ch10', upstream_model: 'v', route_mode: String });
  t.equal(logged.credential_id, null);
  t.equal(logged.timings.ttfb_ms, null, 'the gateway\'s own refusal: no upstream byte was sent');
});

t.test('x-live with a key that does not allow it is refused 403 protocol_not_allowed in the generate shape', async (t) => {
  const { gw, liveUrl } = await liveGateway(t);
  const { value, record } = await gw.store.accessKeys.create({ name: 'k', protocols: ['x-generate'] });
  const answer = await upgradeAnswer(liveUrl('voice', value));
  t.equal(answer.status, 403);
  t.match(JSON.parse(answer.body), generateError(403, 'PERMISSION_DENIED', 'protocol_not_allowed'));
  t.match(await logOf(gw, record.id, 403), { protocol: 'x-live', operation: 'live', error_code: 'protocol_not_allowed', group_id: null });
});

t.test('x-live asking for a response format other than json or sse is refused 400 unsupported_response_format in the generate shape', async (t) => {
  const { gw, liveUrl } = await liveGateway(t);
  const { value, record } = await gw.store.accessKeys.create({ name: 'k', protocols: ['x-live'] });
  for (const query of ['alt=proto', '%24alt=media']) {
    const answer = await upgradeAnswer(`${liveUrl('voice', value)}&${query}`);
    t.equal(answer.status, 400, query);
    t.match(JSON.parse(answer.body), generateError(400, 'INVALID_ARGUMENT', 'unsupported_response_format'), query);
  }
  t.match(await logOf(gw, record.id, 400), { protocol: 'x-live', operation: 'live', error_code: 'unsupported_response_format' });
});

t.test('x-live for a model no Group serves to the key is refused 404 model_not_visible in the generate shape', async (t) => {
  const { gw, liveUrl } = await liveGateway(t);
  const { value, record } = await gw.store.accessKeys.create({ name: 'k', protocols: ['x-live'] });
  const answer = await upgradeAnswer(liveUrl('nope', value));
  t.equal(answer.status, 404);
  t.match(JSON.parse(answer.body), generateError(404, 'NOT_FOUND', 'model_not_visible'));
  t.match(await logOf(gw, record.id, 404), { protocol: 'x-live', operation: 'live', external_model: 'nope', error_code: 'model_not_visible', group_id: null });
});

t.test('a refused upgrade answers an HTTP error before joining', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'voice', upstream: 'v' }], protocols: ['x-completions'] });
  t.equal(await upgradeStatus(`${gw.url.replace('http', 'ws')}/v1/audio/transcriptions/realtime?model=voice&key=${keyValue}`), 403, 'protocol x-suite not allowed on this key');
});

t.test('a session refused by the route of the Group chosen records that Group, its channel and upstream model', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  // ch02 declares no realtime transcription route: the engine refuses it for that Group.
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'] });
  t.equal(await upgradeStatus(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`), 400);
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
  }, 'the refusal logged');
  t.match(record, { status: 400, error_code: 'route_not_declared', channel: 'ch02', upstream_model: 'voice-up', credential_id: null });
  t.ok(record.group_id, 'the refusing Group named');
});

t.test('a realtime session counts against the key quota; once it is used up the upgrade is refused with 429', async (t) => {
  const upstream = await startWsUpstream();
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], quota: { total: { requests: 1 } } });
  const wsUrl = `${gw.url.replace('http', 'ws')}/v1/audio/transcriptions/realtime?model=voice&key=${keyValue}`;
  const client = await connect(wsUrl);
  client.close(1000);
  await new Promise((r) => client.once('close', r));
  await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0];
  }, 'the first session logged');
  t.equal(await upgradeStatus(wsUrl), 429, 'the second session is over the quota');
  t.equal(upstream.seen.length, 1, 'the refused one never reached the upstream');
});

t.test('an upgrade whose model is longer than the model-name cap, or empty, is refused before routing, and its record does not keep the name', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'voice', upstream: 'v' }], protocols: ['x-suite'] });
  const long = 'm'.repeat(2048);
  const refused = await upgradeAnswer(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=${long}&key=${keyValue}`);
  t.equal(refused.status, 400);
  t.match(JSON.parse(refused.body), { error: { code: 'invalid_query_parameter' } });
  t.notOk(refused.body.includes(long), 'the name is not quoted back');
  const record = await logOf(gw, key.id, 400);
  t.ok((record.external_model ?? '').length <= 1024, 'the record does not keep the whole name');
  const empty = await upgradeAnswer(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=&key=${keyValue}`);
  t.equal(empty.status, 400);
  t.match(JSON.parse(empty.body), { error: { code: 'model_missing' } }, 'an empty model is a missing one, as on HTTP routes');
});

function echoed(client: WebSocket, text: string): Promise<string> {
  const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  client.send(text);
  return reply;
}

async function closeClient(client: WebSocket): Promise<void> {
  const closed = new Promise((r) => client.once('close', r));
  client.close(1000);
  await closed;
}

t.test('a realtime session through a group-scope HTTP proxy reaches the upstream by a CONNECT tunnel', async (t) => {
  const upstream = await startWsUpstream();
  const proxy = await startHttpConnectProxy({ username: 'relay', password: 'p@ss word' });
  t.teardown(async () => {
    await proxy.close();
    await upstream.close();
  });
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url);
  await gw.store.groups.update(group.id, { proxy_url: proxy.url });
  const client = await connect(wsUrl);
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  t.same(proxy.tunnels, [new URL(upstream.url).host], 'the proxy carried the session');
  t.equal(proxy.refused, 0, 'with the proxy credentials of the URL');
  await closeClient(client);
});

t.test('a realtime session through a credential-scope SOCKS5 proxy reaches the upstream through it', async (t) => {
  const upstream = await startWsUpstream();
  const socks = await startSocks5Server();
  t.teardown(async () => {
    await socks.close();
    await upstream.close();
  });
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url);
  const [credential] = await gw.store.credentials.list(group.id);
  await gw.store.credentials.update(group.id, credential!.id, { proxy_url: socks.url });
  const client = await connect(wsUrl);
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  t.same(socks.destinations, [new URL(upstream.url).host]);
  await closeClient(client);
});

/** An upstream that accepts connections and never answers on them; `closed` counts the ones the gateway ended. */
async function startSilentUpstream(t: Test) {
  const accepted = new Set<Socket>();
  let closed = 0;
  const silent = createNetServer((socket) => {
    accepted.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => closed++);
    // Read (and dropped), so that the gateway ending the connection is seen.
    socket.resume();
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const s of accepted) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, accepted, closed: () => closed };
}

t.test('an upstream that accepts the connection but never answers the upgrade: 504 upstream_timeout once the headers timeout passes', async (t) => {
  const silent = await startSilentUpstream(t);
  const { gw, key, wsUrl } = await realtimeRoute(t, silent.url, { options: { headersTimeoutMs: 1000 } });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 504);
  t.match(JSON.parse(answer.body), { error: { code: 'upstream_timeout' } });
  t.equal(silent.accepted.size, 1, 'the upstream had accepted the connection');
  t.match(await logOf(gw, key.id, 504), { error_code: 'upstream_timeout', attempts: [{ status: null, error_code: 'upstream_timeout' }] });
});

// As an HTTP answer overdue: the upstream may already be transcribing, and the deadline is no
// fault of the credential (any other would wait as long). The deadline leaves a loaded machine
// time to handle the connect before it: one handled after it counts as a connect timeout.
t.test('a handshake that timed out may have reached the upstream: no second credential, and no credential cools down', async (t) => {
  const silent = await startSilentUpstream(t);
  const { gw, key, group, wsUrl } = await realtimeRoute(t, silent.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'], options: { headersTimeoutMs: 1000 } });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 504);
  t.match(JSON.parse(answer.body), { error: { code: 'upstream_timeout' } }, 'the failure itself, in the protocol error shape');
  t.equal(silent.accepted.size, 1, 'one upstream connection only');
  const record = await logOf(gw, key.id, 504);
  t.match(record, { error_code: 'upstream_timeout', attempt_count: 1, attempts: [{ status: null, error_code: 'upstream_timeout' }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

t.test("an upstream that refuses the connection saw nothing: the next Group is tried even though the operation is unsafe to replay, not the Group's other credential at the same address", async (t) => {
  const { gw, key, group, wsUrl } = await realtimeRoute(t, await closedPortUrl(), { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  await gw.store.groups.update(group.id, { priority: 10 });
  const next = await seedGroup(gw.store, { channel: 'ch03', baseUrl: await closedPortUrl(), models: [{ external: 'voice', upstream: 'voice-up' }], secrets: ['sk-upstream-c'] });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 502);
  t.match(JSON.parse(answer.body), { error: { code: 'upstream_unreachable' } });
  const record = await logOf(gw, key.id, 502);
  t.same(
    record.attempts.map((a) => [a.group_id, a.error_code]),
    [
      [String(group.id), 'upstream_connect_failed'],
      [String(next.group.id), 'upstream_connect_failed'],
    ],
  );
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state).sort(), ['active', 'cooldown'], 'the credential tried cools down, the one passed over does not');
});

t.test('an unusable proxy URL already stored is the gateway\'s configuration failing: 502 proxy_misconfigured, nothing sent, no cooldown', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  // Written to the store directly: the management API refuses such a URL.
  await gw.store.groups.update(group.id, { proxy_url: 'ftp://proxy.test:21' });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 502);
  t.match(JSON.parse(answer.body), { error: { code: 'proxy_misconfigured' } });
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  // The other credential is behind the same proxy: not tried, it would fail the same way.
  t.match(await logOf(gw, key.id, 502), { error_code: 'proxy_misconfigured', attempt_count: 1, attempts: [{ error_code: 'proxy_misconfigured' }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

t.test('a managed proxy that is down is the gateway\'s side failing: 502 proxy_unreachable, nothing sent, no cooldown', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  await gw.store.groups.update(group.id, { proxy_url: await closedPortUrl() });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 502);
  t.match(JSON.parse(answer.body), { error: { code: 'proxy_unreachable' } });
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  // The other credential is behind the same proxy: not tried, it would fail the same way.
  t.match(await logOf(gw, key.id, 502), { error_code: 'proxy_unreachable', attempt_count: 1, attempts: [{ error_code: 'proxy_unreachable' }] });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

t.test('a plain request (no Upgrade) to a WebSocket route is refused before any upstream call, in the error shape, and logged', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, keyValue } = await realtimeRoute(t, upstream.url);
  const res = await fetch(`${gw.url}${REALTIME_PATH}?model=voice`, { headers: { authorization: `Bearer ${keyValue}` } });
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { code: 'invalid_websocket_handshake' } });
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  t.match(await logOf(gw, key.id, 400), { error_code: 'invalid_websocket_handshake', attempt_count: 0, credential_id: null });
});

t.test('a client that leaves during the upstream handshake calls it off: no other attempt, no cooldown, logged 499 client_closed as a client abort', async (t) => {
  const silent = await startSilentUpstream(t);
  const { gw, key, group, wsUrl } = await realtimeRoute(t, silent.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'], options: { headersTimeoutMs: 30_000 } });
  const client = new WebSocket(wsUrl);
  client.on('error', () => {});
  await eventually(() => (silent.accepted.size === 1 ? true : undefined), 'the upstream handshake under way');
  client.terminate();
  await eventually(() => (silent.closed() === 1 ? true : undefined), 'the upstream connection ended by the gateway');
  const record = await logOf(gw, key.id, 499);
  t.match(record, { error_code: 'client_closed', client_aborted: true, attempt_count: 1, attempts: [{ status: null, error_code: 'client_closed' }], credential_id: record.attempts[0]!.credential_id });
  t.equal(silent.accepted.size, 1, 'no second upstream connection');
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
});

t.test('an upgrade whose path starts with a doubled slash opens the session of the path it names', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
  const client = new WebSocket(wsUrl.replace(REALTIME_PATH, `/${REALTIME_PATH}`));
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  await closeClient(client);
  t.equal(upstream.seen.length, 1, 'the upstream session was opened');
  t.match(await logOf(gw, key.id, 101), { operation: 'audio-transcriptions-realtime' });
});

t.test('the 101 carries the request id of the session\'s log record', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
  const client = new WebSocket(wsUrl);
  let headers: IncomingMessage['headers'] = {};
  client.once('upgrade', (res) => (headers = res.headers));
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  await closeClient(client);
  const record = await logOf(gw, key.id, 101);
  t.equal(headers['x-switchyard-request-id'], record.request_id);
  t.equal(headers['x-request-id'], record.request_id);
});

t.test('the 101 carries the end-to-end headers of the upstream\'s 101 as sent, the upstream key masked, and the gateway\'s own request id', async (t) => {
  const upstream = await startWsUpstream({
    handshakeHeaders: (req) => [
      'x-request-id: up-ws-req',
      'x-ratelimit-remaining: 7',
      'set-cookie: operator-session=1; Path=/',
      'set-cookie: b=2',
      `x-echo: ${String(req.headers.authorization)}`,
      'keep-alive: timeout=5',
    ],
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-echoed-0123456789'] });
  // A subprotocol makes both 101s carry one more handshake header of their own.
  const client = new WebSocket(wsUrl, ['x-proto']);
  let res: IncomingMessage | undefined;
  client.once('upgrade', (r) => (res = r));
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  await closeClient(client);
  const record = await logOf(gw, key.id, 101);
  const headers = res!.headers;
  t.equal(headers['x-request-id'], 'up-ws-req', 'the upstream\'s request id comes back as sent');
  t.equal(headers['x-ratelimit-remaining'], '7');
  t.equal(headers['set-cookie'], undefined, 'the operator\'s cookies with the upstream are not the client\'s');
  t.equal(headers['x-echo'], 'Bearer ***6789', 'the upstream key is masked');
  t.equal(headers['keep-alive'], undefined, 'hop-by-hop headers stay on the upstream hop');
  t.equal(headers['x-switchyard-request-id'], record.request_id);
  // The gateway answers the client's handshake itself: one line each, none of the upstream's.
  const names = res!.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  for (const name of ['x-request-id', 'x-switchyard-request-id', 'upgrade', 'connection', 'sec-websocket-accept', 'sec-websocket-protocol']) {
    t.equal(names.filter((n) => n === name).length, 1, `one ${name} line`);
  }
});

t.test('a realtime transcription session logs the usage of its transcription.done events, with the cost from the model price', async (t) => {
  const done = (prompt: number, completion: number) => JSON.stringify({ type: 'transcription.done', model: 'voice-up', text: 'hi', language: 'en', usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_audio_seconds: 3 } });
  const events = [
    '{"type":"session.created","session":{}}',
    // Another event that names transcription.done and carries a usage: not a transcription's.
    '{"type":"transcription.segment","text":"transcription.done","usage":{"prompt_tokens":999,"completion_tokens":999}}',
    done(120, 8),
    done(45, 3),
  ];
  const upstream = await startWsUpstream({
    onSession: (ws) => {
      for (const e of events) ws.send(e);
      // A JSON message in a binary frame (as Gemini Live sends them) is read; audio is not, even
      // audio whose bytes hold a transcription.done.
      ws.send(Buffer.from(done(7, 1)), { binary: true });
      ws.send(Buffer.concat([Buffer.from([0x00, 0x01]), Buffer.from(done(1000, 1000))]), { binary: true });
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
  await gw.store.modelPrices.put('voice-up', { input_per_mtok: 2, output_per_mtok: 10 }, 'manual');
  const client = new WebSocket(wsUrl);
  const received: string[] = [];
  client.on('message', (d) => received.push(d.toString()));
  await eventually(() => (received.length === events.length + 2 ? true : undefined), 'every frame at the client');
  t.same(received.slice(0, events.length), events, 'frames pass untouched');
  await closeClient(client);
  const record = await logOf(gw, key.id, 101);
  t.same(record.usage, { input_tokens: 120 + 45 + 7, output_tokens: 8 + 3 + 1, cached_tokens: 0, reasoning_tokens: 0 });
  t.equal(record.cost, ((120 + 45 + 7) * 2 + (8 + 3 + 1) * 10) / 1_000_000);
});

t.test('a session whose own usage goes past the key\'s tokens quota is ended with 1008 quota_exceeded, and its record says so', async (t) => {
  const done = (prompt: number, completion: number) => JSON.stringify({ type: 'transcription.done', text: 'hi', usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
  const upstream = await startWsUpstream({
    onSession: (ws) => {
      // 60 tokens, within the 100 the key may use; then 60 more, past it.
      ws.send(done(50, 10));
      setTimeout(() => ws.send(done(40, 20)), 50);
    },
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], quota: { total: { tokens: 100 } } });
  const client = new WebSocket(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => client.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  t.same(await withTimeout(closed, 5000, 'the gateway to end the session'), { code: 1008, reason: 'quota_exceeded' });
  t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1008);
  const record = await logOf(gw, key.id, 101);
  t.match(record, { error_code: 'quota_exceeded', usage: { input_tokens: 90, output_tokens: 30 } });
  t.match(record.attempts, [{ status: 101, error_code: null }], "the gateway's 1008 is not the upstream's");
});

t.test('a session within its key\'s tokens quota is not ended by it', async (t) => {
  const upstream = await startWsUpstream({ onSession: (ws) => ws.send(JSON.stringify({ type: 'transcription.done', text: 'hi', usage: { prompt_tokens: 50, completion_tokens: 10 } })) });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], quota: { total: { tokens: 100 } } });
  const client = new WebSocket(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  const frames: string[] = [];
  client.on('message', (d) => frames.push(d.toString()));
  await eventually(() => (frames.length === 1 ? true : undefined), 'the usage event at the client');
  t.equal(client.readyState, WebSocket.OPEN, 'the session goes on');
  await closeClient(client);
  t.match(await logOf(gw, key.id, 101), { error_code: null, usage: { input_tokens: 50, output_tokens: 10 } });
});

/** An upstream that answers a client frame `usage N` with a transcription.done of N input tokens, and echoes the rest. */
function usageUpstream() {
  return startWsUpstream({
    onMessage: (ws, text) => {
      const n = text.startsWith('usage ') ? Number(text.slice('usage '.length)) : undefined;
      ws.send(n === undefined ? `echo:${text}` : JSON.stringify({ type: 'transcription.done', text: 'hi', usage: { prompt_tokens: n, completion_tokens: 0, total_tokens: n } }));
    },
  });
}

/** Sends a frame and waits for the upstream's answer to it at the client. */
function roundTrip(client: WebSocket, frame: string): Promise<string> {
  const reply = new Promise<string>((resolve) => client.once('message', (d) => resolve(d.toString())));
  client.send(frame);
  return withTimeout(reply, 5000, `the answer to ${frame}`);
}

const keyEnds: { name: string; change: (gw: Awaited<ReturnType<typeof startDataPlane>>, id: number) => Promise<unknown>; code: string }[] = [
  { name: 'deleted', change: (gw, id) => gw.store.accessKeys.delete(id), code: 'access_key_invalid' },
  { name: 'rotated', change: (gw, id) => gw.store.accessKeys.rotate(id), code: 'access_key_invalid' },
  { name: 'disabled', change: (gw, id) => gw.store.accessKeys.update(id, { enabled: false }), code: 'access_key_disabled' },
  { name: 'expired', change: (gw, id) => gw.store.accessKeys.update(id, { expires_at: new Date(Date.now() - 60_000).toISOString() }), code: 'access_key_expired' },
  { name: 'given an expires_at that names no instant (a row stored before the rule)', change: (gw, id) => gw.store.accessKeys.update(id, { expires_at: '2099-01-01T00:00:00+01' }), code: 'access_key_expired' },
];

for (const c of keyEnds) {
  t.test(`an open session whose key is ${c.name} is ended with 1008 ${c.code} on both sides, and its record says so`, async (t) => {
    const upstream = await usageUpstream();
    t.teardown(() => upstream.close());
    const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
    const client = await connect(wsUrl);
    const closed = closeOf(client);
    t.equal(await roundTrip(client, 'before'), 'echo:before', 'the session runs');
    await c.change(gw, key.id);
    t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1008, reason: c.code });
    t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1008);
    t.match(await logOf(gw, key.id, 101), { error_code: c.code });
  });
}

const quotaEdits = [
  { name: 'lowered below what it used', initial: { total: { tokens: 1000 } } },
  { name: 'added', initial: null },
];

for (const c of quotaEdits) {
  t.test(`a session whose key's tokens quota is ${c.name} mid-session is ended with 1008 quota_exceeded when its next usage goes past it`, async (t) => {
    const upstream = await usageUpstream();
    t.teardown(() => upstream.close());
    const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { quota: c.initial });
    const client = await connect(wsUrl);
    const closed = closeOf(client);
    await roundTrip(client, 'usage 10');
    await gw.store.accessKeys.update(key.id, { quota: { total: { tokens: 50 } } });
    // 10 + 60 tokens, past the 50 the key may now use.
    client.send('usage 60');
    t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1008, reason: 'quota_exceeded' });
    t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1008);
    t.match(await logOf(gw, key.id, 101), { error_code: 'quota_exceeded', usage: { input_tokens: 70 } });
  });
}

t.test('an upstream answering the upgrade with 404 and a JSON body: the client gets that answer, and no other credential is tried', async (t) => {
  const body = '{"error":{"message":"no such model: voice-up","code":"model_not_found"}}';
  const upstream = await startWsUpstream({ refuse: () => ({ status: 404, headers: { 'content-type': 'application/json', 'x-upstream-trace': 'trace-1' }, body }) });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 404);
  t.equal(answer.headers['content-type'], 'application/json');
  t.equal(answer.headers['x-upstream-trace'], 'trace-1');
  t.equal(answer.body, body);
  t.ok(answer.headers['x-switchyard-request-id'], 'the gateway request id rides along');
  t.equal(upstream.seen.length, 1, 'a 404 says nothing about the credential');
  t.match(await logOf(gw, key.id, 404), { error_code: 'upstream_404', credential_id: String, attempts: [{ status: 404, error_code: 'upstream_404' }] });
});

t.test('an upstream that echoes its key in the upgrade answer: the client gets the answer with the key masked', async (t) => {
  const upstream = await startWsUpstream({
    refuse: (req) => ({ status: 400, headers: { 'content-type': 'application/json', 'x-echo': String(req.headers.authorization) }, body: `{"error":{"message":"bad request for ${String(req.headers.authorization)}"}}` }),
  });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-echoed-0123456789'] });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 400);
  t.equal(answer.body, '{"error":{"message":"bad request for Bearer ***6789"}}');
  t.equal(answer.headers['x-echo'], 'Bearer ***6789');
});

for (const [form, echo] of [
  ['as it is', (key: string) => key],
  ['percent-encoded', encodeURIComponent],
  ['with / escaped as \\/', (key: string) => key.replaceAll('/', '\\/')],
] as const) {
  t.test(`an upstream that closes the session with a reason echoing its key ${form}: the client gets the code and the reason with the key masked`, async (t) => {
    // `/`, `+` and `=` are what the escapes change.
    const key = 'sk-up/closing+key=0123456789';
    const echoed = echo(key);
    const upstream = await startWsUpstream({ onSession: (ws) => ws.once('message', () => ws.close(4000, `denied ${echoed}`)) });
    t.teardown(() => upstream.close());
    const { wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: [key] });
    const client = await connect(wsUrl);
    const closed = new Promise<[number, string]>((r) => client.once('close', (code, reason) => r([code, reason.toString()])));
    client.send('hello');
    // What a data-plane client sees of the key (maskedForClients): its last four characters.
    t.same(await closed, [4000, 'denied ***6789']);
  });
}

t.test('an upgrade answered 401 moves to the next credential; when none is left, the last failover answer reaches the client as sent', async (t) => {
  let limited = false;
  const upstream = await startWsUpstream({
    refuse: (req): Refusal | undefined => {
      if (req.headers.authorization === 'Bearer sk-revoked') return { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":"invalid key"}' };
      if (limited) return { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '30' }, body: '{"error":"slow down"}' };
      return undefined;
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-revoked', 'sk-good'] });

  const client = await connect(wsUrl);
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  await closeClient(client);
  t.same(upstream.seen.map((r) => r.headers.authorization), ['Bearer sk-revoked', 'Bearer sk-good']);
  t.match(await logOf(gw, key.id, 101), { attempts: [{ status: 401, error_code: 'upstream_401' }, { status: 101, error_code: null }] });
  const revoked = (await gw.store.credentials.list(group.id)).find((c) => c.state === 'disabled');
  t.ok(revoked, 'the credential answered 401 is disabled');

  limited = true;
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 429, 'the only credential left answered 429: passed on, not replaced');
  t.equal(answer.headers['retry-after'], '30');
  t.equal(answer.body, '{"error":"slow down"}');
  t.match(await logOf(gw, key.id, 429), { error_code: 'upstream_429', attempts: [{ status: 429 }] });
});

t.test('an upgrade answered 500 by an upstream that may have started: an operation unsafe to replay gets that answer, with no second credential', async (t) => {
  const upstream = await startWsUpstream({ refuse: () => ({ status: 500, headers: { 'content-type': 'application/json' }, body: '{"error":"internal"}' }) });
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 500);
  t.equal(answer.body, '{"error":"internal"}', 'as the upstream sent it');
  t.equal(upstream.seen.length, 1, 'one attempt only');
  const record = await logOf(gw, key.id, 500);
  t.match(record, { error_code: 'upstream_500', attempt_count: 1, attempts: [{ status: 500, error_code: 'upstream_500' }] });
  const states = new Map((await gw.store.credentials.list(group.id)).map((c) => [String(c.id), c.state]));
  t.equal(states.get(String(record.attempts[0]!.credential_id)), 'cooldown', 'the credential that answered 500 cools down');
  t.same([...states.values()].sort(), ['active', 'cooldown']);
});

t.test('frames the upstream sends the moment the session opens reach the client', async (t) => {
  const upstream = await startWsUpstream({ greeting: '{"type":"session.created"}' });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = new WebSocket(wsUrl);
  const first = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  t.equal(await first, '{"type":"session.created"}');
  await closeClient(client);
});

t.test('an upstream that sends faster than the client reads is held back instead of the gateway buffering its frames', async (t) => {
  const FRAMES = 512;
  const frame = (i: number) => Buffer.alloc(64 * 1024, i % 251);
  const { client, up } = await openSession(t);
  const received: Buffer[] = [];
  client.on('message', (data: Buffer) => received.push(data));
  client.pause();
  for (let i = 0; i < FRAMES; i++) up.send(frame(i), { binary: true });
  // 32 MiB sent; what the gateway does not take stays queued at the upstream.
  const heldBack = await eventually(async () => {
    const before = up.bufferedAmount;
    await new Promise((r) => setTimeout(r, 200));
    return up.bufferedAmount === before && before > 0 ? before : undefined;
  }, 'the upstream to stop draining');
  t.ok(heldBack > 16 * 1024 * 1024, `most of the 32 MiB waits at the upstream, not in the gateway (${heldBack} bytes)`);
  client.resume();
  await eventually(() => (received.length === FRAMES ? true : undefined), 'every frame at the client');
  t.ok(received.every((data, i) => data.equals(frame(i))), 'every frame arrives, in order, once the client reads');
  await closeClient(client);
});

t.test('closing the server ends an open session with 1001 on both sides and writes its log record first', async (t) => {
  const upstream = await startWsUpstream();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-ws-shutdown-'));
  const server = await createGateway({ dataDir, port: 0, authKey: 'websocket-shutdown-auth-key-0123456789', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { key, keyValue } = await seedRoute(server.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'] });
  const client = await connect(`${server.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  const clientClose = new Promise<number>((r) => client.once('close', (code) => r(code)));

  await server.close();
  t.pass('close() resolved with a session open');
  t.equal(await clientClose, 1001, 'the client was told the gateway is going away');
  t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1001);
  const logs = openSqliteLogStore(dataDir);
  try {
    const page = await logs.list({ access_key_id: key.id }, { limit: 10 });
    t.match(page.items, [{ protocol: 'x-suite', status: 101, client_aborted: false, upstream_model: 'voice-up', error_code: 'shutting_down' }]);
  } finally {
    await logs.close();
  }
});

t.test('a client offering two subprotocols is answered with the one the upstream selected, and frames pass both ways', async (t) => {
  const upstream = await startWsUpstream({ selectProtocol: (offered) => (offered.has('transcribe.v2') ? 'transcribe.v2' : false) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl, ['transcribe.v1', 'transcribe.v2']);
  t.equal(client.protocol, 'transcribe.v2', 'the upstream chose the second');
  t.equal(upstream.seen[0]!.headers['sec-websocket-protocol'], 'transcribe.v1,transcribe.v2', 'both were offered upstream');
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  await closeClient(client);
});

t.test('a subprotocol carrying the client\'s own AccessKey is not offered upstream', async (t) => {
  const upstream = await startWsUpstream({ selectProtocol: (offered) => (offered.has('transcribe.v2') ? 'transcribe.v2' : false) });
  t.teardown(() => upstream.close());
  const { wsUrl, keyValue } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl, ['transcribe.v2', `openai-insecure-api-key.${keyValue}`]);
  t.equal(client.protocol, 'transcribe.v2');
  t.equal(upstream.seen[0]!.headers['sec-websocket-protocol'], 'transcribe.v2', 'only the subprotocol without the key was offered');
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  await closeClient(client);
});

t.test('no subprotocol carrying a key is offered upstream, whoever\'s key it holds', async (t) => {
  const upstream = await startWsUpstream({ selectProtocol: (offered) => (offered.has('transcribe.v2') ? 'transcribe.v2' : false) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl, ['transcribe.v2', 'openai-insecure-api-key.sk-someone-elses-key', 'OpenAI-Insecure-Api-Key.sk-another']);
  t.equal(client.protocol, 'transcribe.v2');
  t.equal(upstream.seen[0]!.headers['sec-websocket-protocol'], 'transcribe.v2', 'only the subprotocol without a key was offered');
  await closeClient(client);
});

t.test('the account scope subprotocols (organization, project) a browser client offers are not offered upstream', async (t) => {
  const upstream = await startWsUpstream({ selectProtocol: (offered) => (offered.has('realtime') ? 'realtime' : false) });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl, ['realtime', 'openai-organization.org-client', 'openai-project.proj_client', 'OpenAI-Organization.org-other', 'OPENAI-PROJECT.proj_other']);
  t.equal(client.protocol, 'realtime');
  t.equal(upstream.seen[0]!.headers['sec-websocket-protocol'], 'realtime', 'only the subprotocol without an account scope was offered');
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  await closeClient(client);
});

t.test('an upstream that refuses a client\'s organization 401 mismatched_organization never sees it: the session opens and every credential stays enabled', async (t) => {
  const upstream = await startWsUpstream({
    selectProtocol: (offered) => (offered.has('realtime') ? 'realtime' : false),
    refuse: (req) =>
      /openai-(organization|project)\./i.test(String(req.headers['sec-websocket-protocol'] ?? ''))
        ? { status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'OpenAI-Organization header should match organization for API key', type: 'invalid_request_error', code: 'mismatched_organization' } }) }
        : undefined,
  });
  t.teardown(() => upstream.close());
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  const client = await connect(wsUrl, ['realtime', 'openai-organization.org-client', 'openai-project.proj_client']);
  t.equal(client.protocol, 'realtime');
  t.equal(await echoed(client, 'hello'), 'echo:hello');
  await closeClient(client);
  t.equal(upstream.seen.length, 1, 'one attempt');
  t.same((await gw.store.credentials.list(group.id)).map((c) => [c.enabled, c.disabled_reason]), [[true, null], [true, null]], 'every credential still enabled');
});

t.test('an upstream that selects none of the offered subprotocols: 400 subprotocol_not_accepted, the credential stays usable and no other is tried', async (t) => {
  const upstream = await startWsUpstream({ selectProtocol: () => false });
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  const answer = await upgradeAnswer(wsUrl, { protocols: ['transcribe.v9'] });
  t.equal(answer.status, 400);
  t.match(JSON.parse(answer.body), { error: { code: 'subprotocol_not_accepted' } });
  t.equal(upstream.seen.length, 1, 'a client offer the upstream declines says nothing about the credential');
  t.same((await gw.store.credentials.list(group.id)).filter((c) => c.state !== 'active'), [], 'no credential cooled down');
  t.match(await logOf(gw, key.id, 400), { error_code: 'subprotocol_not_accepted', attempts: [{ status: 101, error_code: 'subprotocol_not_accepted' }] });
});

/** An upgrade request with exactly `headers` beside Connection and Upgrade, and the HTTP answer to it. */
function rawUpgrade(url: string, headers: Record<string, string>, method = 'GET'): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const req = request(url.replace('ws', 'http'), { method, headers: { connection: 'Upgrade', upgrade: 'websocket', ...headers } });
    req.once('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('the upgrade was accepted'));
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: Buffer.concat(chunks).toString() }));
    });
    req.once('error', reject);
    req.end();
  });
}

t.test('an invalid WebSocket handshake is answered 400 invalid_websocket_handshake before any upstream is contacted', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const key = 'dGhlIHNhbXBsZSBub25jZQ==';
  const cases: [string, Record<string, string>][] = [
    ['no Sec-WebSocket-Key', { 'sec-websocket-version': '13' }],
    ['a Sec-WebSocket-Key that is not 16 bytes in base64', { 'sec-websocket-key': 'c2hvcnQ=', 'sec-websocket-version': '13' }],
    ['an unsupported Sec-WebSocket-Version', { 'sec-websocket-key': key, 'sec-websocket-version': '12' }],
    ['a duplicated subprotocol', { 'sec-websocket-key': key, 'sec-websocket-version': '13', 'sec-websocket-protocol': 'chat, chat' }],
  ];
  for (const [what, headers] of cases) {
    const answer = await rawUpgrade(wsUrl, headers);
    t.equal(answer.status, 400, what);
    t.match(JSON.parse(answer.body), { error: { code: 'invalid_websocket_handshake', type: 'invalid_request_error' } }, what);
    t.ok(answer.headers['x-switchyard-request-id'], `${what}: with the request id`);
  }
  t.equal((await rawUpgrade(wsUrl, { 'sec-websocket-key': key, 'sec-websocket-version': '12' })).headers['sec-websocket-version'], '13', 'the supported version is named');
  const post = await rawUpgrade(wsUrl, { 'sec-websocket-key': key, 'sec-websocket-version': '13' }, 'POST');
  t.equal(post.status, 405, 'an upgrade is a GET');
  t.equal(post.headers['allow'], 'GET', 'and the 405 says so');
  t.match(JSON.parse(post.body), { error: { code: 'method_not_allowed' } });
  t.equal(upstream.connections(), 0, 'the upstream never saw a connection');
});

t.test('an unexpected error in the upgrade handler (a credential that no longer decrypts) is answered 500 internal_error and reported as a warning', async (t) => {
  const upstream = await startWsUpstream();
  const gw = await gatewayWithUndecryptableCredential((store) => seedRoute(store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'] }));
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const { key, keyValue } = gw.seeded;

  const answer = await upgradeAnswer(`${gw.server.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  t.equal(answer.status, 500, 'a bug of ours, not an upstream failure');
  t.match(JSON.parse(answer.body), { error: { code: 'internal_error' } });
  const warning = await eventually(() => gw.warnings.find((w) => w.message.startsWith('data plane:')), 'the warning');
  t.match(warning.message, /unable to authenticate data/, 'with the cause');
  t.equal(upstream.connections(), 0);
  const record = await eventually(async () => (await gw.server.logs.list({ access_key_id: key.id }, { limit: 10 })).items[0], 'the log record');
  t.match(record, { status: 500, error_code: 'internal_error' });
});
