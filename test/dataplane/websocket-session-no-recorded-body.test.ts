import t from 'tap';
import { seedRoute, startDataPlane } from './helpers/data-plane-harness.ts';
import { eventually, waitForLog } from './helpers/dataplane-scenarios.ts';
import { connect, REALTIME_PATH, startWsUpstream } from './helpers/ws-upstream.ts';

// docs/management-api.md, the log record: a WebSocket session's record holds no request body,
// even for a key with record_request_body (no frame is recorded), and the list says so too.

t.test('a session of a key that records request bodies: its record has no request_body', async (t) => {
  const upstream = await startWsUpstream();
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], recordBody: true });
  const client = await connect(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  const reply = new Promise<string>((r) => client.once('message', (d) => r(d.toString())));
  client.send('{"type":"session.update","frame":"not recorded"}');
  t.match(await reply, /^echo:/);
  client.close(1000);
  await new Promise((r) => client.once('close', r));
  // Written once the session has ended on both sides.
  const listed = await eventually(async () => {
    await gw.logs.flush();
    const items = (await gw.logs.list({ access_key_id: key.id }, { limit: 10 })).items;
    return items.length > 0 ? items : undefined;
  }, 'the session record');
  t.match(listed, [{ status: 101, has_request_body: false }]);
  const record = await waitForLog(gw, listed[0]?.request_id);
  t.notOk('request_body' in record, 'no request_body');
});
