import t, { type Test } from 'tap';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, logOf, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

const USAGE = JSON.stringify({ type: 'transcription.done', text: 'x', usage: { prompt_tokens: 90, completion_tokens: 30, total_tokens: 120 } });

/**
 * A realtime route to an upstream that answers the client's first message with its usage and
 * then closes with the code the message names; the client's close is returned with the route.
 */
async function sessionClosedByUpstream(t: Test, code: number) {
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      ws.send(USAGE);
      ws.close(Number(text), 'upstream says so');
    },
  });
  t.teardown(() => upstream.close());
  const route = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-one-aaaaaaaaaaaaaaaaaaaaaaaa', 'sk-two-bbbbbbbbbbbbbbbbbbbbbbbb'] });
  const client = await connect(route.wsUrl);
  t.teardown(() => client.terminate());
  const clientClose = closeOf(client);
  client.send(String(code));
  return { ...route, clientClose: await clientClose };
}

async function credentialStates(t: Test, gw: Awaited<ReturnType<typeof realtimeRoute>>['gw'], groupId: number) {
  const credentials = await gw.store.credentials.list(groupId);
  t.equal(credentials.length, 2);
  return credentials.map((c) => c.state);
}

for (const code of [1011, 1008, 1002]) {
  t.test(`an upstream that ends its session with ${code} leaves upstream_session_error and the code in the record, and no cooldown`, async (t) => {
    const { gw, key, group, clientClose } = await sessionClosedByUpstream(t, code);
    t.same(clientClose, { code, reason: 'upstream says so' }, 'the client is told the upstream\'s code');
    const record = await logOf(gw, key.id, 101);
    t.match(record, { status: 101, error_code: 'upstream_session_error', client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
    t.match(record.attempts, [{ credential_id: String(record.credential_id), status: 101, error_code: `upstream_close_${code}` }]);
    t.same(await credentialStates(t, gw, group.id), ['active', 'active']);
  });
}

t.test('an upstream that ends its session with 1013 (try again later) puts its credential in cooldown, as a 503 would', async (t) => {
  const { gw, key, group, clientClose } = await sessionClosedByUpstream(t, 1013);
  t.equal(clientClose.code, 1013);
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'upstream_session_error' });
  t.match(record.attempts, [{ status: 101, error_code: 'upstream_close_1013' }]);
  const used = await eventually(async () => {
    const credentials = await gw.store.credentials.list(group.id);
    return credentials.find((c) => c.state === 'cooldown');
  }, 'the credential in cooldown');
  t.equal(String(used.id), record.credential_id, 'the session\'s credential cools down');
  t.same((await credentialStates(t, gw, group.id)).sort(), ['active', 'cooldown'], 'the other stays usable');
});

for (const code of [1000, 1001, 1012, 3000, 4000, 4999]) {
  t.test(`an upstream that ends its session with ${code} ended it normally: no error in the record`, async (t) => {
    const { gw, key, group, clientClose } = await sessionClosedByUpstream(t, code);
    t.equal(clientClose.code, code);
    const record = await logOf(gw, key.id, 101);
    t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
    t.match(record.attempts, [{ status: 101, error_code: null }]);
    t.same(await credentialStates(t, gw, group.id), ['active', 'active']);
  });
}
