import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, startGateway, type Gateway } from '../management/support/gateway.ts';
import { eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, REALTIME_PATH, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

/**
 * A real server with a ch03 Group mapping `voice` and `v2`, one api_key credential, and a key
 * allowed x-suite, all set up through the management API; a realtime session for `voice` is open.
 */
async function openVoiceSession(t: Test) {
  // `usage N` is answered with a transcription.done carrying N tokens (the session's next usage), anything else echoed.
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      const n = text.startsWith('usage ') ? Number(text.slice('usage '.length)) : undefined;
      ws.send(n === undefined ? `echo:${text}` : JSON.stringify({ type: 'transcription.done', text: 'hi', usage: { prompt_tokens: n, completion_tokens: 0, total_tokens: n } }));
    },
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const group = await gw.create('/api/groups', { name: 'voice', channel: 'ch03', base_url: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }, { external: 'v2' }] });
  t.equal(group.status, 201);
  const groupId = group.json.data.id as number;
  t.ok((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-voice-0123456789abcdef' })).status < 300, 'the credential is imported');
  const key = await seedAccessKey(gw, { protocols: ['x-suite'] });
  const wsUrl = `${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${key.value}`;
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const closed = closeOf(client);
  t.equal(await roundTrip(client, 'before'), 'echo:before', 'the session runs');
  const patch = async (body: Record<string, unknown>) => t.equal((await gw.api('PATCH', `/api/access-keys/${key.id}`, { body })).status, 200);
  return { gw, upstream, groupId, key, wsUrl, client, closed, patch };
}

function roundTrip(client: WebSocket, frame: string): Promise<string> {
  const reply = new Promise<string>((resolve) => client.once('message', (d) => resolve(d.toString())));
  client.send(frame);
  return withTimeout(reply, 5000, `the answer to ${frame}`);
}

/** The key's session record (status 101) as the management API lists it, once it names an error code. */
function sessionRecord(gw: Gateway, keyId: number) {
  return eventually(async () => {
    const items = (await gw.api('GET', `/api/logs?access_key_id=${keyId}`)).json.data.items as { status: number; error_code: string | null }[];
    return items.find((r) => r.status === 101 && r.error_code !== null);
  }, 'the session\'s log record');
}

const narrowings = [
  { name: 'models no longer name its model', body: () => ({ models: ['v2'] }) },
  { name: 'groups no longer name its Group', body: () => ({ groups: [] }) },
];

for (const c of narrowings) {
  t.test(`an open session whose key's ${c.name} is ended with 1008 model_not_visible on both sides, as a new session is refused`, async (t) => {
    const { gw, upstream, key, wsUrl, closed, patch } = await openVoiceSession(t);
    await patch(c.body());
    t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1008, reason: 'model_not_visible' });
    t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1008);
    t.match(await sessionRecord(gw, key.id), { status: 101, error_code: 'model_not_visible' });
    const refusal = await upgradeAnswer(wsUrl);
    t.equal(refusal.status, 404);
    t.match(refusal.body, /model_not_visible/, 'a new session for the model gets the same code');
  });
}

t.test('a narrowing that still covers the session\'s model and Group leaves it running: a later disable is what ends it', async (t) => {
  const { gw, groupId, key, client, closed, patch } = await openVoiceSession(t);
  await patch({ models: ['voice'], groups: [groupId] });
  // The session's next usage reads the changed key again; the session goes on.
  await roundTrip(client, 'usage 1');
  t.equal(await roundTrip(client, 'after'), 'echo:after', 'the session still runs');
  await patch({ enabled: false });
  t.same(await withTimeout(closed, 15_000, 'the gateway to end the session'), { code: 1008, reason: 'access_key_disabled' });
  t.match(await sessionRecord(gw, key.id), { error_code: 'access_key_disabled' });
  t.equal(client.readyState, client.CLOSED);
});
