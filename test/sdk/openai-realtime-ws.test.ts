import t from 'tap';
import { connect as plainConnect, type NetConnectOpts } from 'node:net';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { logOf, realtimeRoute, startWsUpstream } from '../dataplane/helpers/ws-upstream.ts';

// The openai SDK's Node realtime client (openai/realtime/ws) on x-suite's realtime transcription
// route (ch03): with the base URL `.../v1/audio/transcriptions` it opens
// `/v1/audio/transcriptions/realtime?model=...`, its key as `Authorization: Bearer`. It always
// asks for wss (a TLS terminator in front of the gateway); here ws's `createConnection` option,
// which the SDK passes on, opens plain TCP to the test gateway instead.

const overPlainTcp = { createConnection: (options: NetConnectOpts) => plainConnect(options) } as object;

function realtime(gatewayUrl: string, apiKey: string): OpenAIRealtimeWS {
  return new OpenAIRealtimeWS({ model: 'voice', options: overPlainTcp }, new OpenAI({ apiKey, baseURL: `${gatewayUrl}/v1/audio/transcriptions` }));
}

function closeOf(rt: OpenAIRealtimeWS): Promise<[number, string]> {
  return new Promise((r) => rt.socket.once('close', (code, reason) => r([code, reason.toString()])));
}

t.test('the SDK\'s bearer key opens the session, the upstream gets its own credential and the mapped model, events both ways, usage in the record', async (t) => {
  const seen: string[] = [];
  const upstream = await startWsUpstream({
    onMessage: (ws, text) => {
      seen.push(text);
      ws.send(JSON.stringify({ type: 'transcription.done', text: 'hi', usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }));
      ws.close(1000);
    },
  });
  t.teardown(() => upstream.close());
  const { gw, key, keyValue } = await realtimeRoute(t, upstream.url);
  const rt = realtime(gw.url, keyValue);
  const events: unknown[] = [];
  rt.on('event', (e) => events.push(e));
  const errors: string[] = [];
  rt.on('error', (e) => errors.push(e.message));
  await new Promise((r) => rt.socket.once('open', r));
  const closed = closeOf(rt);
  // The SDK's event types are OpenAI's; the gateway passes any JSON event as sent.
  rt.send({ type: 'input_audio_buffer.append', audio: 'AAAA' });
  t.same(await closed, [1000, '']);

  t.same(seen, ['{"type":"input_audio_buffer.append","audio":"AAAA"}']);
  t.match(events, [{ type: 'transcription.done', usage: { prompt_tokens: 5 } }]);
  t.same(errors, []);
  const request = upstream.seen[0]!;
  t.equal(request.url, '/v1/audio/transcriptions/realtime?model=voice-up');
  t.equal(request.headers.authorization, 'Bearer sk-upstream-1', 'the client\'s bearer is replaced by the credential');
  t.notOk(JSON.stringify(request.headers).includes(keyValue), 'nor sent in any other header');
  t.match(await logOf(gw, key.id, 101), { protocol: 'x-suite', operation: 'audio-transcriptions-realtime', upstream_model: 'voice-up', usage: { input_tokens: 5, output_tokens: 2 } });
});

t.test('a refused bearer key reaches the SDK\'s error listener with the HTTP status, the socket closing 1006', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw } = await realtimeRoute(t, upstream.url);
  const rt = realtime(gw.url, 'sk-not-a-key');
  const errors: string[] = [];
  rt.on('error', (e) => errors.push(e.message));
  t.same(await closeOf(rt), [1006, '']);
  t.same(errors, ['Unexpected server response: 401']);
  t.equal(upstream.seen.length, 0);
});
