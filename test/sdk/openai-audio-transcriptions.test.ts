import t from 'tap';
import OpenAI, { toFile } from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { writeJson } from './helpers/vendor-wire.ts';

// The official openai SDK (v6) against switchyard's audio transcription route (ch03, x-suite).

t.test('transcriptions.create({ file, model }): the SDK sends the file first; a file past the model search limit still goes through', async (t) => {
  // 16 KiB buffered: the model is looked for in memory up to 128 KiB, the file is 300 KB.
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => writeJson(res, 200, { text: 'hello there' }), { bufferedJsonBytes: 16 * 1024 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'team-stt', upstream: 'whisper-large-v3' }], protocols: ['x-suite'], upstreamKeys: ['sk-upstream-1'] });
  const audio = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 131) % 256));
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  const transcription = await client.audio.transcriptions.create({ file: await toFile(audio, 'speech.mp3', { type: 'audio/mpeg' }), model: 'team-stt' });

  t.equal(transcription.text, 'hello there');
  const seen = upstream.requests[0]!;
  const text = seen.body.toString('latin1');
  t.ok(text.indexOf('filename="speech.mp3"') < text.indexOf('name="model"'), 'the file came before the model, as the SDK sends it');
  t.match(text, /name="model"\r\n\r\nwhisper-large-v3\r\n/, 'the upstream gets the mapped model');
  t.ok(seen.body.includes(audio), 'the file arrives intact');
  t.equal(seen.headers.authorization, 'Bearer sk-upstream-1');
});
