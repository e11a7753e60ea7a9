import t from 'tap';
import { GoogleGenAI, Modality, type LiveServerMessage, type Session } from '@google/genai';
import type { WebSocket } from 'ws';
import { liveChannelHarness, startLiveRoute } from '../dataplane/helpers/live-channel-copy.ts';
import { logOf } from '../dataplane/helpers/ws-upstream.ts';

// The official @google/genai SDK (v2) driving x-live sessions (ch10) through `ai.live.connect`.
// The SDK's own Gemini URL (`/ws/google.ai.generativelanguage...?key=`) names no model, which the
// gateway routes by before the first frame; its Vertex mode with a custom base URL and no
// project, location or API key (the SDK's proxy setup) opens that URL as given, headers included.

const harness = await liveChannelHarness();

const USAGE = { promptTokenCount: 12, responseTokenCount: 3, totalTokenCount: 15 };

/**
 * Answers as Gemini Live does, every message a JSON binary frame: `setupComplete` to the setup,
 * then to a client turn a model turn, the turn's end with its usageMetadata, and `close`.
 */
function vendorLike(close: [number, string] = [1000, '']) {
  const seen: string[] = [];
  const answers = {
    onMessage: (ws: WebSocket, text: string) => {
      seen.push(text);
      const send = (message: object) => ws.send(Buffer.from(JSON.stringify(message)), { binary: true });
      const message = JSON.parse(text) as Record<string, unknown>;
      if ('setup' in message) send({ setupComplete: {} });
      if ('clientContent' in message) {
        send({ serverContent: { modelTurn: { role: 'model', parts: [{ text: 'Hi there' }] } } });
        send({ serverContent: { turnComplete: true }, usageMetadata: USAGE });
        ws.close(...close);
      }
    },
  };
  return { seen, answers };
}

/** `ai.live.connect` to the gateway's x-live route for `model`, presenting `key`; what its callbacks saw. */
function liveConnect(gatewayUrl: string, key: string, model = 'live-voice') {
  const ai = new GoogleGenAI({ vertexai: true, httpOptions: { baseUrl: `${gatewayUrl}/v1/live?model=${model}`, headers: { 'x-goog-api-key': key } } });
  const messages: LiveServerMessage[] = [];
  const errors: string[] = [];
  let closed!: (c: { code: number; reason: string }) => void;
  const close = new Promise<{ code: number; reason: string }>((r) => (closed = r));
  // Resolves once setupComplete came; never when the upgrade is refused (the SDK waits for onopen).
  const session: Promise<Session> = ai.live.connect({
    model,
    config: { responseModalities: [Modality.TEXT] },
    callbacks: {
      onmessage: (m) => messages.push(m),
      // ws's ErrorEvent (the DOM type is not in this project's lib).
      onerror: (e) => errors.push((e as unknown as { message: string }).message),
      onclose: (e) => closed({ code: e.code, reason: e.reason }),
    },
  });
  return { session, messages, errors, close };
}

t.test('ai.live.connect: the setup goes upstream with the mapped model, turns both ways as sent, usage in the record, the upstream\'s close to onclose', async (t) => {
  const vendor = vendorLike();
  const { gw, upstream, key, keyValue } = await startLiveRoute(harness, t, undefined, vendor.answers);
  const live = liveConnect(gw.url, keyValue);
  const session = await live.session;
  t.equal(new URL(upstream.seen[0]!.url ?? '', 'ws://u.invalid').searchParams.get('model'), 'gemini-live-up');
  t.same(JSON.parse(vendor.seen[0]!), { setup: { model: 'publishers/google/models/gemini-live-up', generationConfig: { responseModalities: ['TEXT'] } } }, 'the setup names the upstream model, in the form the SDK wrote it, the rest as sent');

  session.sendClientContent({ turns: 'hello', turnComplete: true });
  t.same(await live.close, { code: 1000, reason: '' });
  t.equal(vendor.seen[1], '{"clientContent":{"turns":[{"role":"user","parts":[{"text":"hello"}]}],"turnComplete":true}}', 'the turn reaches the upstream as the SDK sent it');
  t.same(live.errors, []);
  t.match(live.messages, [{ setupComplete: {} }, { serverContent: { modelTurn: { parts: [{ text: 'Hi there' }] } } }, { serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount: 12, totalTokenCount: 15 } }], 'Gemini\'s binary frames reach the SDK and parse');
  t.match(await logOf(gw, key.id, 101), { protocol: 'x-live', error_code: null, client_aborted: false, external_model: 'live-voice', upstream_model: 'gemini-live-up', usage: { input_tokens: 12, output_tokens: 3 } });
});

t.test('an upstream that ends the session with 1011 and a reason: the SDK\'s onclose gets both, the record says upstream_session_error with the usage so far', async (t) => {
  const vendor = vendorLike([1011, 'Internal error occurred.']);
  const { gw, key, keyValue } = await startLiveRoute(harness, t, undefined, vendor.answers);
  const live = liveConnect(gw.url, keyValue);
  (await live.session).sendClientContent({ turns: 'hello' });
  t.same(await live.close, { code: 1011, reason: 'Internal error occurred.' });
  t.match(await logOf(gw, key.id, 101), { error_code: 'upstream_session_error', attempts: [{ status: 101, error_code: 'upstream_close_1011' }], usage: { input_tokens: 12, output_tokens: 3 } });
});

t.test('a tokens quota passed mid-session: onclose gets 1008 quota_exceeded; the next connect is refused 429 before any upstream session', async (t) => {
  const vendor = vendorLike();
  const { gw, upstream, keyValue } = await startLiveRoute(harness, t, { total: { tokens: 10 } }, vendor.answers);
  const live = liveConnect(gw.url, keyValue);
  (await live.session).sendClientContent({ turns: 'hello' });
  t.same(await live.close, { code: 1008, reason: 'quota_exceeded' });

  const next = liveConnect(gw.url, keyValue);
  t.same(await next.close, { code: 1006, reason: '' });
  t.same(next.errors, ['Unexpected server response: 429'], 'ws reports the HTTP refusal of the upgrade through onerror');
  t.equal(upstream.seen.length, 1, 'the refused session reached no upstream');
});

t.test('refused upgrades reach the SDK as onerror with the HTTP status and onclose 1006, no upstream contacted', async (t) => {
  const { gw, upstream, keyValue } = await startLiveRoute(harness, t, undefined, vendorLike().answers);
  const generateOnly = await gw.store.accessKeys.create({ name: 'generate only', protocols: ['x-generate'], record_request_body: false, quota: null });
  for (const [what, key, model, status] of [
    ['an unknown key', 'sk-not-a-key', 'live-voice', 401],
    ['an unknown model', keyValue, 'no-such-model', 404],
    ['a key without x-live', generateOnly.value, 'live-voice', 403],
  ] as const) {
    const live = liveConnect(gw.url, key, model);
    t.same(await live.close, { code: 1006, reason: '' }, what);
    t.same(live.errors, [`Unexpected server response: ${status}`], what);
  }
  t.equal(upstream.seen.length, 0);
});
