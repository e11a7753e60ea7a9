import t from 'tap';
import OpenAI from 'openai';
import { Stream } from 'openai/core/streaming';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';
import { writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// The official openai SDK (v6) streaming speech through switchyard (ch03, x-suite):
// audio.speech.create({ stream_format: 'sse' }) and the SDK's own SSE reader over its answer.

const FRAMES: SseFrame[] = [
  { event: 'speech.audio.delta', data: { type: 'speech.audio.delta', audio: 'SUQzBAAAAAAA' } },
  { event: 'speech.audio.delta', data: { type: 'speech.audio.delta', audio: '//uQZAAAAAAA' } },
  { event: 'speech.audio.done', data: { type: 'speech.audio.done', usage: { input_tokens: 9, output_tokens: 4, total_tokens: 13 } } },
];

t.test("audio.speech.create({ stream_format: 'sse' }): every event reaches the SDK and the usage is recorded", async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => writeSse(res, FRAMES));
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'team-tts', upstream: 'gpt-4o-mini-tts' }], protocols: ['x-suite'], upstreamKeys: ['sk-upstream-1'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  const { data: response, response: raw } = await client.audio.speech.create({ model: 'team-tts', input: 'Hello there', voice: 'alloy', stream_format: 'sse' }).withResponse();
  t.match(raw.headers.get('content-type'), /^text\/event-stream/);
  const events: unknown[] = [];
  for await (const event of Stream.fromSSEResponse(response, new AbortController())) events.push(event);

  t.same(events, FRAMES.map((f) => f.data), 'the events as the upstream sent them, in order');
  const sent = JSON.parse(upstream.requests[0]!.body.toString('utf8')) as Record<string, unknown>;
  t.match(sent, { model: 'gpt-4o-mini-tts', input: 'Hello there', voice: 'alloy', stream_format: 'sse' }, 'the upstream gets the mapped model and the stream format');
  t.equal(upstream.requests[0]!.headers.authorization, 'Bearer sk-upstream-1');

  const record = await waitForLog(gw, raw.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null, operation: 'audio-speech', external_model: 'team-tts', upstream_model: 'gpt-4o-mini-tts' });
  t.same(record.usage, { input_tokens: 9, output_tokens: 4, cached_tokens: 0, reasoning_tokens: 0 }, 'usage from speech.audio.done');
});
