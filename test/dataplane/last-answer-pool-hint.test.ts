import t, { type Test } from 'tap';
import { seedRoute, startDataPlane, startUpstream, type Gateway } from './helpers/data-plane-harness.ts';
import { closedPortUrl } from './helpers/dataplane-scenarios.ts';
import { realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A request's last answer, whatever it is (an upstream's answer passed on, the gateway's own
// failure of an answer it could not decode, a WebSocket upgrade's refusal), carries the pool's
// retry hint when no credential is left usable; the hint decides retry-after, retry-after-ms and
// x-should-retry together.

// The gateway's clock stands still, an hour ahead of the system clock (which the store judges a
// cooldown by: one already over is not stored): each hint is the wait from the instant the
// cooldowns were set at.
const NOW = Date.now() + 3_600_000;

async function chatRoute(t: Test, baseUrl: string, upstreamKeys: string[]): Promise<{ gw: Gateway; keyValue: string }> {
  const gw = await startDataPlane({ clock: () => NOW });
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl, models: [{ external: 'team-chat', upstream: 'vendor-m' }], protocols: ['x-completions'], upstreamKeys });
  return { gw, keyValue };
}

const chat = (gw: Gateway, keyValue: string) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }) });

const retryHeaders = (headers: Headers) => ({ 'retry-after': headers.get('retry-after'), 'retry-after-ms': headers.get('retry-after-ms'), 'x-should-retry': headers.get('x-should-retry') });

t.test("an upstream's x-should-retry: false goes with its own retry-after: the pool's short wait replaces both", async (t) => {
  const upstream = await startUpstream((req, res) => {
    const a = String(req.headers['authorization']).includes('sk-A');
    writeJson(res, 429, { error: { message: 'limited', type: 'rate_limit', code: 'rate_limit' } }, a ? { 'retry-after': '2' } : { 'retry-after': '3600', 'x-should-retry': 'false' });
  });
  t.teardown(() => upstream.close());
  const { gw, keyValue } = await chatRoute(t, upstream.url, ['sk-A', 'sk-B']);
  const res = await chat(gw, keyValue);
  await res.arrayBuffer();
  t.equal(res.status, 429);
  t.equal(upstream.requests.length, 2, 'both credentials were tried');
  t.same(retryHeaders(res.headers), { 'retry-after': '2', 'retry-after-ms': '2000', 'x-should-retry': null }, 'the SDK may retry in 2 s, as the pool says');
});

t.test("after a failover with a credential still usable, the last answer loses its waits but keeps its own x-should-retry", async (t) => {
  const upstream = await startUpstream((req, res) => {
    if (String(req.headers['authorization']).includes('sk-A')) return writeJson(res, 429, { error: { message: 'limited', type: 'rate_limit', code: 'rate_limit' } }, { 'retry-after': '2' });
    writeJson(res, 400, { error: { message: 'bad prompt', type: 'invalid_request_error', code: 'bad' } }, { 'retry-after': '5', 'x-should-retry': 'false' });
  });
  t.teardown(() => upstream.close());
  const { gw, keyValue } = await chatRoute(t, upstream.url, ['sk-A', 'sk-B']);
  const res = await chat(gw, keyValue);
  await res.arrayBuffer();
  t.equal(res.status, 400);
  t.equal(upstream.requests.length, 2, 'both credentials were tried');
  t.same(retryHeaders(res.headers), { 'retry-after': null, 'retry-after-ms': null, 'x-should-retry': 'false' }, "the upstream's word on retrying this request at all stands");
});

// One credential and one attempt: its 429 (retry-after 3600) cools it down for an hour, and the
// answer it came with cannot be decoded (a coding the gateway does not know), so the client gets
// the gateway's 502 in its place.
const UNDECODABLE_429 = { 'retry-after': '3600', 'content-encoding': 'x-unknown-coding' };

for (const { label, contentType } of [
  { label: 'a JSON error read whole', contentType: 'application/json' },
  { label: 'an event-stream error passed on as it streams', contentType: 'text/event-stream' },
]) {
  t.test(`the last answer undecodable (${label}): the gateway's 502 carries the pool's hint`, async (t) => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': contentType, ...UNDECODABLE_429 });
      res.end('\x00\x01 not in any coding the gateway reads');
    });
    t.teardown(() => upstream.close());
    const { gw, keyValue } = await chatRoute(t, upstream.url, ['sk-only']);
    await gw.store.settings.save({ max_attempts_per_request: 1 });
    const res = await chat(gw, keyValue);
    const body = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 502);
    t.equal(body.error.code, 'upstream_unreachable');
    t.match(body.error.message, /cannot decode to mask/);
    t.same(retryHeaders(res.headers), { 'retry-after': '3600', 'retry-after-ms': '3600000', 'x-should-retry': 'false' }, 'the only credential recovers in an hour: no retry');
  });
}

t.test("a WebSocket upgrade's last refusal passed on after failover carries the pool's hint, not the last credential's", async (t) => {
  const upstream = await startWsUpstream({
    refuse: (req) => {
      const a = req.headers.authorization === 'Bearer sk-A';
      return { status: 429, headers: { 'content-type': 'application/json', ...(a ? { 'retry-after': '2' } : { 'retry-after': '3600', 'x-should-retry': 'false' }) }, body: '{"error":"slow down"}' };
    },
  });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-A', 'sk-B'], options: { clock: () => NOW } });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 429);
  t.equal(upstream.seen.length, 2, 'both credentials were tried');
  t.equal(answer.body, '{"error":"slow down"}', 'the body as sent');
  t.same({ 'retry-after': answer.headers['retry-after'], 'retry-after-ms': answer.headers['retry-after-ms'], 'x-should-retry': answer.headers['x-should-retry'] }, { 'retry-after': '2', 'retry-after-ms': '2000', 'x-should-retry': undefined }, "the first credential's recovery, the earlier");
});

t.test("a WebSocket upgrade whose only credential cannot be reached: the gateway's 502 carries the pool's hint", async (t) => {
  const { gw, group, wsUrl } = await realtimeRoute(t, await closedPortUrl(), { upstreamKeys: ['sk-only'], options: { clock: () => NOW } });
  // A failed connection cools down for server_error_cooldown_seconds.
  await gw.store.settings.save({ server_error_cooldown_seconds: 3600 });
  const answer = await upgradeAnswer(wsUrl);
  t.equal(answer.status, 502);
  t.match(JSON.parse(answer.body), { error: { code: 'upstream_unreachable' } });
  t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['cooldown']);
  t.same({ 'retry-after': answer.headers['retry-after'], 'retry-after-ms': answer.headers['retry-after-ms'], 'x-should-retry': answer.headers['x-should-retry'] }, { 'retry-after': '3600', 'retry-after-ms': '3600000', 'x-should-retry': 'false' });
});
