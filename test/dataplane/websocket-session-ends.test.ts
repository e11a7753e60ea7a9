import t from 'tap';
import type { startDataPlane } from './helpers/data-plane-harness.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { closeOf, connect, realtimeRoute, startWsUpstream, upgradeStatus } from './helpers/ws-upstream.ts';

/** The key's session records (status 101), once `count` of them are written. */
async function sessionRecords(gw: Awaited<ReturnType<typeof startDataPlane>>, accessKeyId: number, count: number) {
  return eventually(async () => {
    await gw.logs.flush();
    const items = (await gw.logs.list({ access_key_id: accessKeyId }, { limit: 10 })).items.filter((r) => r.status === 101);
    return items.length === count ? items : undefined;
  }, `${count} session records`);
}

t.test('usage the upstream sends while it answers the client\'s close is in the session\'s record and counts toward the key\'s quota', async (t) => {
  // The upstream answers the client's frame with a transcription carrying 90 + 30 tokens, sent
  // once the gateway's close frame (the client's close passed on) is at its socket, unread:
  // an upstream whose last event crosses the close. It says it heard the frame once it reads no
  // more, so that the client's close (passed on as soon as it is read) cannot arrive with it.
  const upstream = await startWsUpstream({
    onMessage: async (ws, _text, socket) => {
      ws.pause();
      ws.send('heard');
      await eventually(() => (socket.readableLength > 0 ? true : undefined), 'the gateway\'s close frame at the upstream');
      ws.send(JSON.stringify({ type: 'transcription.done', text: 'final words', usage: { prompt_tokens: 90, completion_tokens: 30, total_tokens: 120 } }));
      ws.resume();
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url, { quota: { total: { tokens: 100 } } });
  const client = await connect(wsUrl);
  const clientClose = closeOf(client);
  const heard = new Promise((r) => client.once('message', r));
  client.send('last audio');
  await heard;
  client.close(1000, 'done');
  t.equal((await clientClose).code, 1000);
  const [record] = await sessionRecords(gw, key.id, 1);
  t.match(record, { status: 101, error_code: null, client_aborted: false, usage: { input_tokens: 90, output_tokens: 30 } });
  t.same(upstream.closeCodes, [1000], 'the upstream got the client\'s code');
  t.equal(await upgradeStatus(wsUrl), 429, 'the session\'s 120 tokens used up the key\'s 100');
});

t.test('a side that drops its connection without a close frame: the other side is closed with 1014 or 1011, never 1000', async (t) => {
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      if (text === 'drop') ws.terminate();
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);

  // The upstream drops: the client is told "bad gateway", and the record says the upstream broke off.
  const first = await connect(wsUrl);
  const firstClose = closeOf(first);
  first.send('drop');
  t.equal((await firstClose).code, 1014);
  const [broken] = await sessionRecords(gw, key.id, 1);
  t.match(broken, { status: 101, error_code: 'upstream_stream_broken', client_aborted: false });

  // The client drops: the upstream is told "internal error", and the record counts a client abort.
  const second = await connect(wsUrl);
  second.terminate();
  t.equal(await eventually(() => upstream.closeCodes[1], 'the second session\'s upstream side closed'), 1011);
  const records = await sessionRecords(gw, key.id, 2);
  const aborted = records.find((r) => r.request_id !== broken!.request_id);
  t.match(aborted, { status: 101, error_code: null, client_aborted: true });
});

t.test('a client that closes its session with a close frame ended it, whatever its code: not a client abort', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, key, wsUrl } = await realtimeRoute(t, upstream.url);
  const closes: [number?, string?][] = [[], [1001, 'navigating'], [4000, 'bye']];
  for (const [i, [code, reason]] of closes.entries()) {
    const client = await connect(wsUrl);
    client.close(code, reason);
    await closeOf(client);
    await eventually(() => (upstream.closeCodes.length === i + 1 ? true : undefined), `session ${i + 1}'s upstream side closed`);
  }
  // A close frame with no code (a browser's ws.close()) is a normal end: 1000 upstream.
  t.same(upstream.closeCodes, [1000, 1001, 4000]);
  const records = await sessionRecords(gw, key.id, closes.length);
  t.same(
    records.map((r) => [r.client_aborted, r.error_code]),
    closes.map(() => [false, null]),
  );
});
