import t from 'tap';
import { logOf, realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';

const KEYS = ['sk-one-aaaaaaaaaaaaaaaaaaaaaaaa', 'sk-two-bbbbbbbbbbbbbbbbbbbbbbbb'];

// Header lines each upstream adds to its 101, breaking the client's handshake checks after the 101 arrived.
const BROKEN_101S: { name: string; lines: string[]; detail: string }[] = [
  { name: 'a subprotocol the client did not offer', lines: ['Sec-WebSocket-Protocol: realtime'], detail: 'Server sent a subprotocol but none was requested' },
  // Node joins the repeated header with a comma: the value is no longer the key's digest.
  { name: 'a wrong Sec-WebSocket-Accept', lines: ['Sec-WebSocket-Accept: bm90IHRoZSBkaWdlc3Q='], detail: 'Invalid Sec-WebSocket-Accept header' },
];

for (const broken of BROKEN_101S) {
  t.test(`an upstream 101 with ${broken.name} is 502 upstream_handshake_invalid: no cooldown, no failover, the attempt recorded 101`, async (t) => {
    const upstream = await startWsUpstream({ handshakeHeaders: () => broken.lines });
    t.teardown(() => upstream.close());
    const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: KEYS });
    const answer = await upgradeAnswer(wsUrl);
    t.equal(answer.status, 502);
    t.match(JSON.parse(answer.body), { error: { code: 'upstream_handshake_invalid', message: new RegExp(`\\(${broken.detail}\\)`) } });
    t.equal(upstream.seen.length, 1, 'no other credential was tried');
    const credentials = await gw.store.credentials.list(group.id);
    t.same(credentials.map((c) => c.state), ['active', 'active'], 'no credential cools down');
    const record = await logOf(gw, key.id, 502);
    t.match(record, { status: 502, error_code: 'upstream_handshake_invalid', attempt_count: 1 });
    t.match(record.attempts, [{ credential_id: record.credential_id, status: 101, error_code: 'upstream_handshake_invalid' }]);
  });
}
