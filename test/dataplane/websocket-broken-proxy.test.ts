import t from 'tap';
import { startBrokenProxy, type ProxyBreakage } from './helpers/broken-proxy.ts';
import type { startDataPlane } from './helpers/data-plane-harness.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

// A managed proxy that fails on its own side (closes, resets, answers garbage, or presents a
// certificate the gateway does not trust) is the gateway's side failing on WebSocket routes as
// on HTTP ones: proxy_unreachable, no cooldown, the next credential tried.

async function logsOf(gw: Awaited<ReturnType<typeof startDataPlane>>, accessKeyId: number) {
  return eventually(async () => {
    await gw.logs.flush();
    const { items } = await gw.logs.list({ access_key_id: accessKeyId }, { limit: 10 });
    return items.length > 0 ? items : undefined;
  }, 'the log record');
}

const CASES: { label: string; breakage: ProxyBreakage; scheme?: 'socks5' }[] = [
  { label: 'an HTTP proxy that accepts the connection and closes it', breakage: 'accept-then-close' },
  { label: 'an HTTP proxy that closes the connection after reading the CONNECT', breakage: 'close-after-reading' },
  { label: 'an HTTP proxy that resets the connection', breakage: 'reset' },
  { label: 'an HTTP proxy answering garbage bytes', breakage: 'garbage' },
  { label: 'an HTTPS proxy with an untrusted certificate', breakage: 'untrusted-tls' },
  { label: 'a SOCKS5 proxy that accepts the connection and closes it', breakage: 'accept-then-close', scheme: 'socks5' },
];

for (const { label, breakage, scheme } of CASES) {
  t.test(`a realtime session through ${label}: 502 proxy_unreachable, nothing sent, no cooldown`, async (t) => {
    const upstream = await startWsUpstream();
    const proxy = await startBrokenProxy(breakage);
    t.teardown(async () => {
      await proxy.close();
      await upstream.close();
    });
    const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
    await gw.store.groups.update(group.id, { proxy_url: scheme === undefined ? proxy.url : proxy.url.replace(/^http:/, `${scheme}:`) });

    const answer = await upgradeAnswer(wsUrl, { openedAs101: true });
    t.not(answer, 101, 'not upgraded');
    if (answer === 101) return;
    t.equal(answer.status, 502);
    t.match(JSON.parse(answer.body), { error: { code: 'proxy_unreachable' } });
    t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
    const records = await logsOf(gw, key.id);
    t.equal(records.length, 1, 'one log record');
    // The other credential is behind the same proxy: not tried, it would fail the same way.
    t.match(records[0], { status: 502, error_code: 'proxy_unreachable', attempt_count: 1, attempts: [{ error_code: 'proxy_unreachable' }] });
    t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
    t.ok(proxy.connections() <= 2, `the proxy saw the one attempt, not a loop (${proxy.connections()})`);
  });
}

for (const breakage of ['reset', 'untrusted-tls'] as const) {
  t.test(`a credential's proxy broken (${breakage}) gives way to the next credential on a WebSocket route`, async (t) => {
    const upstream = await startWsUpstream();
    const proxy = await startBrokenProxy(breakage);
    t.teardown(async () => {
      await proxy.close();
      await upstream.close();
    });
    const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
    const [first] = await gw.store.credentials.list(group.id);
    await gw.store.credentials.update(group.id, first!.id, { proxy_url: proxy.url });

    t.equal(await upgradeAnswer(wsUrl, { openedAs101: true }), 101, 'the session opened with the next credential');
    t.same(upstream.seen.map((r) => r.headers.authorization), ['Bearer sk-upstream-b']);
    const [record] = await logsOf(gw, key.id);
    t.match(record, { status: 101, attempts: [{ credential_id: String(first!.id), error_code: 'proxy_unreachable' }, { status: 101 }] });
    t.same((await gw.store.credentials.list(group.id)).map((c) => c.state), ['active', 'active'], 'no credential cooled down');
  });
}
