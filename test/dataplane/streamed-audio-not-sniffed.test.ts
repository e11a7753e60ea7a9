import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A speech request with `"stream": true` (compatible TTS servers such as Kokoro-FastAPI stream
// raw audio on it) answered with audio whose first bytes happen to read as an SSE field line:
// raw PCM is arbitrary bytes, and one sample in 256 starts with `:`. An audio answer is never
// an event stream, so it goes byte for byte, not into the SSE relay, which took it for a stream
// that ended without its final event and answered 502 in its place.

for (const [name, opening] of [
  ['a comment colon', Buffer.from(':')],
  ['a data field', Buffer.from('data:')],
] as const) {
  t.test(`streamed PCM opening with ${name} goes on as sent`, async (t) => {
    const pcm = Buffer.alloc(24_000);
    for (let i = 0; i < pcm.length; i++) pcm[i] = (i * 37 + 11) & 0xff;
    opening.copy(pcm);
    const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/pcm' });
      res.write(pcm.subarray(0, 8_000));
      res.end(pcm.subarray(8_000));
    });
    await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'kokoro' }], secrets: ['sk-up-tts'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { ...clientAuthHeaders('x-suite', keyValue), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts', input: 'Hello.', voice: 'af_bella', response_format: 'pcm', stream: true }),
    });
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'audio/pcm');
    t.ok(Buffer.from(await res.arrayBuffer()).equals(pcm), 'the audio, byte for byte');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null, operation: 'audio-speech' });
  });
}
