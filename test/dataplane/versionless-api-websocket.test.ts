import t from 'tap';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, logOf, REALTIME_PATH, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

// A versionless_api Group's WebSocket routes (docs/data-plane.md, "Choices made here"): the
// session opens at the path without its version segment, and a change of the flag moves the
// upstream URL, so it ends an open session as a new address does.

t.test("a versionless_api Group's realtime session opens at {base_url} + the path without its version", async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, group, wsUrl } = await realtimeRoute(t, `${upstream.url}/inference`);
  await gw.store.groups.update(group.id, { versionless_api: true });
  const client = await connect(wsUrl);
  const closed = closeOf(client);
  client.close(1000);
  await closed;
  t.equal(upstream.seen[0]!.url, `/inference${REALTIME_PATH.slice('/v1'.length)}?model=voice-up`);
});

t.test("an open session whose Group's versionless_api changes is ended: 1012 credential_withdrawn", async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, group, key, wsUrl } = await realtimeRoute(t, upstream.url);
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const closed = closeOf(client);
  const echoed = new Promise<string>((resolve) => client.once('message', (d) => resolve(d.toString())));
  client.send('before');
  t.equal(await withTimeout(echoed, 5000, 'the echo'), 'echo:before', 'the session runs');
  t.equal(upstream.seen[0]!.url, `${REALTIME_PATH}?model=voice-up`);
  await gw.store.groups.update(group.id, { versionless_api: true });
  t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1012, reason: 'credential_withdrawn' });
  t.match(await logOf(gw, key.id, 101), { error_code: 'credential_withdrawn' });
});
