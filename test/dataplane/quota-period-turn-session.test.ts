import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import { closeOf, connect, REALTIME_PATH, startWsUpstream } from './helpers/ws-upstream.ts';
import { eventually, withTimeout } from './helpers/dataplane-scenarios.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';

// A WebSocket session still running when its quota period turns: its record is dated when it
// started and counts in that period (docs/data-plane.md, step 2), so its per-period tokens
// lines are judged in that period too, not in the one that began while it ran.

const at = (iso: string) => Date.parse(iso);

/** A gateway whose realtime upstream answers a frame `n` with a transcription using n tokens. */
async function realtimeGateway(t: Test, quota: Record<string, unknown> | null) {
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      const n = Number(text);
      ws.send(JSON.stringify({ type: 'transcription.done', text: 'x', usage: { prompt_tokens: n / 2, completion_tokens: n / 2, total_tokens: n } }));
    },
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['voice'], { channel: 'ch03', base_url: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-turn-0001' })).status, 200);
  const key = await seedAccessKey(gw, { protocols: ['x-suite'], ...(quota ? { quota } : {}) });
  const open = async () => {
    const ws = await connect(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${key.value}`);
    t.teardown(() => ws.terminate());
    return { ws, closed: closeOf(ws) };
  };
  return { gw, key, open };
}

/** Sends `n` and waits for the usage frame the upstream answers it with (the gateway has judged it by then). */
async function use(ws: WebSocket, n: number): Promise<void> {
  const answered = new Promise((resolve) => ws.once('message', resolve));
  ws.send(String(n));
  await answered;
}

/** A session the client ends, once its record is in: what it was closed with, and its record. */
async function endSession(gw: Gateway, keyId: number, session: { ws: WebSocket; closed: Promise<{ code: number; reason: string }> }, count: number) {
  session.ws.close(1000);
  const closed = await session.closed;
  const records = await eventually(async () => {
    const items = (await gw.api('GET', `/api/logs?access_key_id=${keyId}`)).json.data.items as { created_at: number; error_code: string | null; usage: { input_tokens: number; output_tokens: number } }[];
    return items.length === count ? items : undefined;
  }, `${count} records`);
  return { closed, records };
}

const hourTokens = async (gw: Gateway, keyValue: string) => (await gw.api('GET', '/api/home', { token: keyValue })).json.data.quota.lines[0].used as number;

t.test('a session from the last hour is judged by the last hour: the new hour\'s usage does not end it', async (t) => {
  const { gw, key, open } = await realtimeGateway(t, { per_period: { period: 'hour', tokens: 100 } });
  gw.clock.now = at('2026-03-02T10:59:00.000Z');
  const first = await open();
  await use(first.ws, 10);
  gw.clock.now = at('2026-03-02T11:00:30.000Z');
  const second = await open();
  await use(second.ws, 90);
  t.same((await endSession(gw, key.id, second, 1)).closed, { code: 1000, reason: '' });
  t.equal(await hourTokens(gw, key.value), 90, 'the new hour has 90 of 100');

  await use(first.ws, 2);
  const { closed, records } = await endSession(gw, key.id, first, 2);
  t.same(closed, { code: 1000, reason: '' }, 'ended by its client: 12 tokens of the last hour\'s 100');
  const own = records.find((r) => r.created_at === at('2026-03-02T10:59:00.000Z'));
  t.match(own, { error_code: null, usage: { input_tokens: 6, output_tokens: 6 } }, 'its record is dated when it started');
  t.equal(await hourTokens(gw, key.value), 90, 'the new hour still has 90: the session counts in the last');
});

t.test('a session from the last hour is ended once it goes past the last hour\'s limit, though the new hour is unused', async (t) => {
  const { gw, key, open } = await realtimeGateway(t, { per_period: { period: 'hour', tokens: 100 } });
  gw.clock.now = at('2026-03-02T10:59:00.000Z');
  const first = await open();
  await use(first.ws, 10);
  const other = await open();
  await use(other.ws, 90);
  await endSession(gw, key.id, other, 1);
  gw.clock.now = at('2026-03-02T11:00:30.000Z');
  t.equal(await hourTokens(gw, key.value), 0, 'the new hour is unused');

  await use(first.ws, 2);
  t.same(await withTimeout(first.closed, 5000, 'the gateway to end the session'), { code: 1008, reason: 'quota_exceeded' }, '90 + 12 of the last hour\'s 100');
  const records = await eventually(async () => {
    const items = (await gw.api('GET', `/api/logs?access_key_id=${key.id}`)).json.data.items as { error_code: string | null }[];
    return items.length === 2 ? items : undefined;
  }, 'both records');
  t.equal(records.filter((r) => r.error_code === 'quota_exceeded').length, 1);
  t.equal(await hourTokens(gw, key.value), 0, 'nothing counts in the new hour');
});

t.test('a quota added after the hour turned judges a session from the last hour by the last hour\'s usage, read from the logs', async (t) => {
  const { gw, key, open } = await realtimeGateway(t, null);
  gw.clock.now = at('2026-03-02T10:59:00.000Z');
  const first = await open();
  await use(first.ws, 10);
  const other = await open();
  await use(other.ws, 84);
  await endSession(gw, key.id, other, 1);
  gw.clock.now = at('2026-03-02T11:00:30.000Z');
  t.equal((await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { quota: { per_period: { period: 'hour', tokens: 100 } } } })).status, 200);

  await use(first.ws, 10);
  t.same(await withTimeout(first.closed, 5000, 'the gateway to end the session'), { code: 1008, reason: 'quota_exceeded' }, '84 + 20 of the last hour\'s 100');
});
