import t, { type Test } from 'tap';
import type { ModelPrice } from '../../src/usage/index.ts';
import { liveChannelHarness, startLiveRoute } from './helpers/live-channel-copy.ts';
import { usd } from './helpers/priced-request.ts';
import { connect, logOf, nextFrame } from './helpers/ws-upstream.ts';

// A WebSocket session's audio is priced at the model's audio rates, and its cost quota judged
// with them; ch10's sessions run from a copy of the checkout (liveChannelHarness).
const harness = await liveChannelHarness();

// A native-audio Live model: text $0.50 / $2, audio $3 / $12 per million.
const AUDIO_RATES: ModelPrice = { input_per_mtok: 0.5, output_per_mtok: 2, cached_input_per_mtok: 0.125, audio_input_per_mtok: 3, audio_output_per_mtok: 12, image_input_per_mtok: 1 };
const { audio_input_per_mtok: _ai, audio_output_per_mtok: _ao, image_input_per_mtok: _ii, ...TEXT_ONLY } = AUDIO_RATES;

// Gemini Live usageMetadata with its per-modality lists ([{modality, tokenCount}]).
const TURN_1 = { serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount: 1_000, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 100 }, { modality: 'AUDIO', tokenCount: 800 }, { modality: 'IMAGE', tokenCount: 100 }], responseTokenCount: 500, responseTokensDetails: [{ modality: 'AUDIO', tokenCount: 500 }], totalTokenCount: 1_500 } };
// A later turn from a Vertex-style upstream: output as candidates, part of the prompt cached.
const TURN_2 = { serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount: 2_000, cachedContentTokenCount: 600, cacheTokensDetails: [{ modality: 'AUDIO', tokenCount: 600 }], promptTokensDetails: [{ modality: 'AUDIO', tokenCount: 1_500 }, { modality: 'TEXT', tokenCount: 500 }], candidatesTokenCount: 300, candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 100 }, { modality: 'AUDIO', tokenCount: 200 }], totalTokenCount: 2_300 } };

async function liveRoute(t: Test, price: ModelPrice, quota?: Parameters<typeof harness.seedRoute>[1]['quota']) {
  const { gw, wsUrl, upstreamSession, key } = await startLiveRoute(harness, t, quota);
  await gw.store.modelPrices.put('gemini-live-up', price, 'manual');
  const client = await connect(wsUrl);
  const ws = await upstreamSession();
  const record = () => logOf(gw, key.id, 101);
  return { client, ws, record };
}

t.test('an x-live session: audio input and output at the audio rates, images at the image rate, cached tokens at the cached price', async (t) => {
  const { client, ws, record } = await liveRoute(t, AUDIO_RATES);
  const first = nextFrame(client);
  ws.send(JSON.stringify(TURN_1));
  await first;
  const second = nextFrame(client);
  ws.send(Buffer.from(JSON.stringify(TURN_2)), { binary: true });
  await second;
  client.close(1000);
  const logged = await record();
  // The turns are summed, then priced: 3000 in, of which 600 cached (all audio, cacheTokensDetails),
  // so 1700 of the 2300 audio uncached, then 100 images, 600 text; 800 out, 700 of it audio.
  t.equal(logged.cost, usd([600, 0.125], [1_700, 3], [100, 1], [600, 0.5], [700, 12], [100, 2]));
  t.same(logged.usage, { input_tokens: 3_000, output_tokens: 800, cached_tokens: 600, reasoning_tokens: 0 }, 'the record keeps its four counters');
});

t.test('an x-live session without audio rates is priced as before', async (t) => {
  const { client, ws, record } = await liveRoute(t, TEXT_ONLY);
  const first = nextFrame(client);
  ws.send(JSON.stringify(TURN_1));
  await first;
  client.close(1000);
  t.equal((await record()).cost, usd([1_000, 0.5], [500, 2]));
});

t.test('a session\'s cost quota is judged with the audio rates', async (t) => {
  // Turn 1 costs 0.0085 USD at the audio rates, 0.0015 USD without them.
  for (const [price, ends] of [[AUDIO_RATES, true], [TEXT_ONLY, false]] as const) {
    const { client, ws, record } = await liveRoute(t, price, { total: { cost: 0.005 } });
    const closed = new Promise<string>((r) => client.once('close', (code) => r(`closed ${code}`)));
    // The usage frame reaches the client either way; then a round trip succeeds only while the session is open.
    const roundTrip = nextFrame(client).then(() => {
      const echo = nextFrame(client);
      client.send('still open');
      return echo.then((frame) => frame.data.toString());
    });
    ws.send(JSON.stringify(TURN_1));
    const outcome = await Promise.race([closed, roundTrip]);
    if (ends) {
      t.equal(outcome, 'closed 1008', 'past the quota at the audio rates: ended');
      t.match(await record(), { error_code: 'quota_exceeded' });
    } else {
      t.equal(outcome, 'echo:still open', 'within it at the text rates: the session goes on');
      client.close(1000);
      await closed;
    }
  }
});
