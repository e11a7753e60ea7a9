import t from 'tap';
import { waitForLog } from './helpers/dataplane-scenarios.ts';
import { connect, logOf, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

// docs/management-api.md, the log record: a WebSocket session's record holds no request body,
// even for a key with record_request_body (no frame is recorded), and the list says so too.

t.test('a session of a key that records request bodies: its record has no request_body', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { recordBody: true });
  const client = await connect(wsUrl);
  const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  client.send('{"type":"session.update","frame":"not recorded"}');
  t.match(await reply, /^echo:/);
  client.close(1000);
  await new Promise((r) => client.once('close', r));
  // Written once the session has ended on both sides.
  const listed = await logOf(gw, key.id, 101);
  t.match(listed, { status: 101, has_request_body: false });
  const record = await waitForLog(gw, listed.request_id);
  t.notOk('request_body' in record, 'no request_body');
});
