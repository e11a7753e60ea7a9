import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import type { ConfigStore } from '../../src/store/config-store.ts';
import type { CredentialView, GroupRecord } from '../../src/store/records.ts';
import { deferred, eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, logOf, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

// An open session follows the credential it was opened with and that credential's Group
// (docs/data-plane.md, WebSocket sessions): one withdrawn ends the session with 1012
// credential_withdrawn to the client and a normal close to the upstream.

/** Sends a frame and waits for the upstream's echo of it at the client. */
function roundTrip(client: WebSocket, frame: string): Promise<string> {
  const reply = new Promise<string>((resolve) => client.once('message', (d) => resolve(d.toString())));
  client.send(frame);
  return withTimeout(reply, 5000, `the answer to ${frame}`);
}

/** A realtime session through the data plane to an echoing upstream, with the Group and the one credential it was opened with. */
async function openedSession(t: Test) {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const route = await realtimeRoute(t, upstream.url);
  const [credential] = await route.gw.store.credentials.list(route.group.id);
  const client = await connect(route.wsUrl);
  t.teardown(() => client.terminate());
  const closed = closeOf(client);
  t.equal(await roundTrip(client, 'before'), 'echo:before', 'the session runs');
  return { ...route, upstream, credential: credential!, client, closed };
}

const withdrawals: { name: string; change: (store: ConfigStore, group: GroupRecord, credential: CredentialView) => Promise<unknown> }[] = [
  { name: 'its credential deleted', change: (store, group, c) => store.credentials.delete(group.id, c.id) },
  { name: 'its credential given another secret', change: (store, group, c) => store.credentials.update(group.id, c.id, { values: { api_key: 'sk-upstream-rotated' }, secretFields: ['api_key'] }) },
  { name: 'its credential disabled', change: (store, group, c) => store.credentials.setState(group.id, c.id, { to: 'disabled', reason: 'switched off by the operator' }) },
  { name: "its Group's base_url changed (the credential has no address of its own)", change: (store, group) => store.groups.update(group.id, { base_url: 'http://127.0.0.1:9/moved' }) },
  { name: 'its Group disabled', change: (store, group) => store.groups.update(group.id, { enabled: false }) },
  { name: 'its Group deleted', change: (store, group) => store.groups.delete(group.id) },
];

for (const c of withdrawals) {
  t.test(`an open session with ${c.name} is ended: 1012 credential_withdrawn to the client, 1000 to the upstream, and its record says so`, async (t) => {
    const { gw, key, group, credential, upstream, closed } = await openedSession(t);
    await c.change(gw.store, group, credential);
    t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1012, reason: 'credential_withdrawn' });
    t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1000);
    t.match(await logOf(gw, key.id, 101), { error_code: 'credential_withdrawn' });
  });
}

t.test("an open session whose credential's weight is edited (a new revision, the same secret) runs on", async (t) => {
  const { gw, key, group, credential, upstream, client, closed } = await openedSession(t);
  // The session's follower reads the credential's values again for its new revision: once it has, the edit was judged.
  const reread = deferred();
  const unseal = gw.store.credentials.unseal.bind(gw.store.credentials);
  gw.store.credentials.unseal = async (groupId, id) => {
    const values = await unseal(groupId, id);
    if (id === credential.id) setImmediate(() => reread.resolve());
    return values;
  };
  await gw.store.credentials.update(group.id, credential.id, { weight: 5 });
  await withTimeout(reread.promise, 15_000, 'the session to read its credential again');
  t.equal(await roundTrip(client, 'after'), 'echo:after', 'the session still runs');
  t.same(upstream.closeCodes, [], 'the upstream side is open');
  // Still followed: a withdrawal after the edit ends it.
  await gw.store.credentials.delete(group.id, credential.id);
  t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1012, reason: 'credential_withdrawn' });
  t.match(await logOf(gw, key.id, 101), { error_code: 'credential_withdrawn' });
});

t.test('a session its client closed stays recorded as ended normally when its credential is deleted while the upstream is slow to answer the close', async (t) => {
  // The upstream stops reading at `hold`: the close the gateway passes on waits unanswered until the gateway's grace (1 s) cuts it.
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      if (text === 'hold') ws.pause();
      ws.send(`echo:${text}`);
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url);
  const [credential] = await gw.store.credentials.list(group.id);
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const closed = closeOf(client);
  t.equal(await roundTrip(client, 'hold'), 'echo:hold', 'the session runs');
  client.close(1000);
  await gw.store.credentials.delete(group.id, credential!.id);
  t.same(await withTimeout(closed, 15_000, 'the close to be answered'), { code: 1000, reason: '' }, 'the client ended it');
  // The record is written once the upstream is cut, after the grace: its follower (a look every second) has seen the deletion within it.
  t.match(await logOf(gw, key.id, 101), { error_code: null, client_aborted: false }, 'no withdrawal is recorded for a session already over');
});
