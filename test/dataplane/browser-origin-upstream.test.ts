import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { startWsUpstream, upgradeStatus } from './helpers/ws-upstream.ts';

// A browser's fetch names its page's Origin; the data plane answers CORS itself and is the
// upstream's client, so the Origin stays with it. Anthropic refuses a request naming an Origin
// 401 authentication_error unless it sets anthropic-dangerous-direct-browser-access (and refuses
// that too when the organization has browser access off): forwarded, one page's request would
// disable every credential of the Group. Through the server `switchyard serve` runs.

const AUTH_KEY = 'origin-auth-key-0123456789abcdef0123';
const ORIGIN = 'https://app.example';
const OPT_IN = 'anthropic-dangerous-direct-browser-access';

/** Anthropic's refusal of a browser request, null for a server-side one. */
function browserRefusal(headers: IncomingHttpHeaders): string | null {
  if (headers[OPT_IN] !== undefined) return 'Browser access is disabled for this organization';
  if (headers.origin !== undefined) return "CORS requests must set 'anthropic-dangerous-direct-browser-access' header";
  return null;
}

async function serve(t: Test) {
  const upstream = await startUpstream((req, res) => {
    const refusal = browserRefusal(req.headers);
    if (refusal !== null) {
      res.writeHead(401, { 'content-type': 'application/json', 'request-id': 'req_up' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: refusal } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'hi' }], model: 'claude-up', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }));
  });
  const wsUpstream = await startWsUpstream({ refuse: (req) => (browserRefusal(req.headers) === null ? undefined : { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"origin refused"}}' }) });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-origin-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await upstream.close();
    await wsUpstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = async (p: string, body: unknown) => {
    const res = await fetch(`${server.url}${p}`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }, body: JSON.stringify(body) });
    return ((await res.json()) as { data: Record<string, any> }).data;
  };
  const messages = await api('/api/groups', { name: 'anthropic', channel: 'ch14', base_url: upstream.url, models: [{ external: 'claude', upstream: 'claude-up' }] });
  await api(`/api/groups/${messages.id}/credentials/import`, { credentials: 'sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaa\nsk-ant-api03-bbbbbbbbbbbbbbbbbbbbbbbb\nsk-ant-api03-cccccccccccccccccccccccc' });
  const realtime = await api('/api/groups', { name: 'realtime', channel: 'ch03', base_url: wsUpstream.url, models: [{ external: 'voice', upstream: 'voice-up' }] });
  await api(`/api/groups/${realtime.id}/credentials/import`, { credentials: 'sk-upstream-ws-0123456789abcdefXYZ\nsk-upstream-ws-abcdefXYZ0123456789' });
  const key = (await api('/api/access-keys', { name: 'web', protocols: ['x-messages', 'x-suite'] })).value as string;
  /** Each credential of the Group as [enabled, disabled_reason]. */
  const credentialStates = async (groupId: number) => (await server.store.credentials.list(groupId)).map((c) => [c.enabled, c.disabled_reason]);
  return { server, upstream, wsUpstream, key, messages, realtime, credentialStates };
}

const messageBody = JSON.stringify({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });

for (const [name, browserHeaders] of [
  ['a page\'s fetch (Origin)', { origin: ORIGIN }],
  ['the anthropic SDK in a page (Origin and the opt-in header)', { origin: ORIGIN, [OPT_IN]: 'true' }],
] as const) {
  t.test(`${name} to a ch14 Group: answered, neither header upstream, no credential disabled`, async (t) => {
    const { server, upstream, key, messages, credentialStates } = await serve(t);
    const res = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...browserHeaders }, body: messageBody });
    t.equal(res.status, 200);
    t.match(await res.json(), { type: 'message', content: [{ text: 'hi' }] });
    t.equal(res.headers.get('access-control-allow-origin'), '*', 'the gateway answers CORS itself');
    t.equal(upstream.requests.length, 1, 'one attempt, not refused');
    t.equal(upstream.requests[0]?.headers.origin, undefined, 'no Origin upstream');
    t.equal(upstream.requests[0]?.headers[OPT_IN], undefined, `no ${OPT_IN} upstream`);
    t.equal(upstream.requests[0]?.headers['anthropic-version'], '2023-06-01', 'other client headers still go');
    t.same(await credentialStates(messages.id), [[true, null], [true, null], [true, null]], 'every credential still enabled');
  });
}

t.test('a browser\'s WebSocket handshake (Origin): no Origin upstream, the session opens, no credential disabled', async (t) => {
  const { server, wsUpstream, key, realtime, credentialStates } = await serve(t);
  t.equal(await upgradeStatus(`${server.url.replace('http', 'ws')}/v1/audio/transcriptions/realtime?model=voice&key=${key}`, { origin: ORIGIN, headers: { [OPT_IN]: 'true' } }), 101, 'the session opened');
  t.equal(wsUpstream.seen.length, 1, 'one handshake, not refused');
  const seen = wsUpstream.seen[0]!.headers;
  t.equal(seen.origin, undefined, 'no Origin upstream');
  t.equal(seen['sec-websocket-origin'], undefined, 'nor the old drafts\' Sec-WebSocket-Origin');
  t.equal(seen[OPT_IN], undefined, `no ${OPT_IN} upstream`);
  t.same(await credentialStates(realtime.id), [[true, null], [true, null]], 'every credential still enabled');
});
