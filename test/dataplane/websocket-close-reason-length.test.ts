import t, { type Test } from 'tap';
import { closeOf, connect, logOf, realtimeRoute, startWsUpstream } from './helpers/ws-upstream.ts';

/**
 * An upstream's close reason has the secret masked as `***`, longer than a one- or two-character
 * secret: a reason near the 123-byte limit grows past it. The gateway cuts the masked reason to
 * 123 bytes at a character's end; ws throws for a longer one, in a listener, which ended the process.
 */

/** A realtime route to an upstream that closes with the `{ code, reason }` a client message names, and echoes any other message. */
async function routeToClosingUpstream(t: Test, secret: string) {
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      if (!text.startsWith('{')) return ws.send(`echo:${text}`);
      const { code, reason } = JSON.parse(text) as { code: number; reason: string };
      ws.close(code, reason);
    },
  });
  t.teardown(() => upstream.close());
  return realtimeRoute(t, upstream.url, { upstreamKeys: [secret] });
}

/** The client's close, or the error a listener threw out of the gateway (it would have ended the process). */
async function closeOrUncaught(t: Test, wsUrl: string, code: number, reason: string) {
  let onUncaught!: (error: Error) => void;
  const uncaught = new Promise<{ uncaught: string }>((resolve) => (onUncaught = (error) => resolve({ uncaught: String(error) })));
  process.on('uncaughtException', onUncaught);
  t.teardown(() => process.off('uncaughtException', onUncaught));
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const clientClose = closeOf(client);
  client.send(JSON.stringify({ code, reason }));
  return Promise.race([clientClose, uncaught]);
}

/** The server still serves: a new session through the same route relays a message. */
async function servesNextSession(t: Test, wsUrl: string) {
  const client = await connect(wsUrl);
  t.teardown(() => client.terminate());
  const answer = new Promise<string>((resolve) => client.once('message', (data) => resolve(data.toString())));
  client.send('next');
  t.equal(await answer, 'echo:next', 'the next session is served');
}

t.test('a one-character secret masked in a 122-byte reason: the client gets 4000 and the masked reason cut at a character\'s end', async (t) => {
  const { gw, key, wsUrl } = await routeToClosingUpstream(t, 'k');
  // Masked, the 30 `k` tokens grow by 60 bytes; the 123rd byte falls inside an `é`.
  const reason = `${'k '.repeat(30)}${'é'.repeat(31)}`;
  t.equal(Buffer.byteLength(reason), 122);
  const outcome = await closeOrUncaught(t, wsUrl, 4000, reason);
  t.same(outcome, { code: 4000, reason: `${'*** '.repeat(30)}é` }, 'the session ends with the code and the masked reason, cut');
  t.ok('reason' in outcome && Buffer.byteLength(outcome.reason) <= 123, 'the reason fits a close frame');
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: null, client_aborted: false });
  await servesNextSession(t, wsUrl);
});

t.test('a two-character secret with 1011: the cut does not leave the secret as the reason\'s last whole token', async (t) => {
  const { gw, key, wsUrl } = await routeToClosingUpstream(t, 'kk');
  // Masked, the reason is 124 bytes; cut at 123 it would end in `.kk`, the secret standing alone (in `kkx` it is part of a word).
  const reason = `${'kk '.repeat(30)}.kkx`;
  const outcome = await closeOrUncaught(t, wsUrl, 1011, reason);
  t.same(outcome, { code: 1011, reason: `${'*** '.repeat(30)}.k` }, 'the cut moves back past the part of the word that would be the secret');
  const record = await logOf(gw, key.id, 101);
  t.match(record, { status: 101, error_code: 'upstream_session_error' });
  t.match(record.attempts, [{ status: 101, error_code: 'upstream_close_1011' }]);
  await servesNextSession(t, wsUrl);
});
