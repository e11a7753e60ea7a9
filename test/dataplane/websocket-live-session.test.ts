import t from 'tap';
import { eventually } from './helpers/dataplane-scenarios.ts';
import { LIVE_UPSTREAM_KEY, liveChannelHarness, startLiveRoute } from './helpers/live-channel-copy.ts';
import { connect, logOf, nextFrame, upgradeStatus } from './helpers/ws-upstream.ts';

// ch10's sessions, run from a copy of the checkout that gives it an `api_key` credential (liveChannelHarness).
const harness = await liveChannelHarness();

const usageMessage = (promptTokenCount: number, responseTokenCount: number) => JSON.stringify({ serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount, responseTokenCount, totalTokenCount: promptTokenCount + responseTokenCount } });

t.test('an x-live session on ch10: upstream credential and mapped model, frames both ways, usageMetadata in text and binary frames summed into the record', async (t) => {
  const { gw, upstream, upstreamSession, wsUrl, key, keyValue } = await startLiveRoute(harness, t);
  await gw.store.modelPrices.put('gemini-live-up', { input_per_mtok: 10, output_per_mtok: 20 }, 'manual');
  const client = await connect(wsUrl);

  const seen = upstream.seen[0]!;
  const target = new URL(seen.url ?? '', 'ws://upstream.invalid');
  t.equal(target.pathname, '/v1/live');
  t.equal(target.searchParams.get('model'), 'gemini-live-up', 'the model is mapped');
  t.equal(target.searchParams.get('session_hint'), 'a1', 'the client\'s other query parameters pass');
  t.notOk(target.searchParams.has('key'), 'the client\'s key parameter is removed');
  t.notOk((seen.url ?? '').includes(keyValue), 'the client\'s key never reaches the upstream');
  t.equal(seen.headers['x-goog-api-key'], LIVE_UPSTREAM_KEY, 'the credential in the generate style header');
  t.notOk(seen.headers.authorization, 'and not as a bearer token');

  const text = nextFrame(client);
  client.send('{"realtimeInput":{"text":"hello"}}');
  t.same(await text, { data: Buffer.from('echo:{"realtimeInput":{"text":"hello"}}'), binary: false }, 'a text frame up and back, as text');
  const audio = Buffer.from([0x00, 0x01, 0xfe, 0xff]);
  const binary = nextFrame(client);
  client.send(audio, { binary: true });
  t.same(await binary, { data: audio, binary: true }, 'a binary frame up and back, as binary');

  const ws = await upstreamSession();
  const first = nextFrame(client);
  ws.send(usageMessage(100, 20));
  t.same(await first, { data: Buffer.from(usageMessage(100, 20)), binary: false }, 'usage in a text frame reaches the client');
  const second = nextFrame(client);
  ws.send(Buffer.from(usageMessage(40, 10)), { binary: true });
  t.same(await second, { data: Buffer.from(usageMessage(40, 10)), binary: true }, 'usage in a binary frame (as Gemini Live sends it) reaches the client as binary');

  const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
  client.close(1000);
  t.equal(await closed, 1000);
  const record = await logOf(gw, key.id, 101);
  t.match(record, {
    protocol: 'x-live',
    operation: 'live',
    status: 101,
    error_code: null,
    client_aborted: false,
    channel: 'ch10',
    external_model: 'live-voice',
    upstream_model: 'gemini-live-up',
    credential_id: String,
    usage: { input_tokens: 140, output_tokens: 30 },
  });
  // 140 input tokens at 10 USD and 30 output tokens at 20 USD per million.
  t.equal(record.cost, 0.002, 'priced at the upstream model\'s price');
  t.same(upstream.closeCodes, [1000]);
});

t.test('an x-live session\'s first message, its setup, names the model the session was routed to, whatever model it named; later messages pass as sent', async (t) => {
  const { wsUrl } = await startLiveRoute(harness, t);
  const client = await connect(wsUrl);
  const echoOf = async (message: string) => {
    const echoed = nextFrame(client);
    client.send(message);
    return JSON.parse((await echoed).data.toString().slice('echo:'.length)) as unknown;
  };
  t.same(await echoOf('{"setup":{"model":"models/a-model-the-key-may-not-use","generationConfig":{"responseModalities":["AUDIO"]}}}'), { setup: { model: 'models/gemini-live-up', generationConfig: { responseModalities: ['AUDIO'] } } }, 'the path up to models/ kept, the rest as sent');
  t.same(await echoOf('{"setup":{"model":"models/other"}}'), { setup: { model: 'models/other' } }, 'a setup after the first message is the upstream\'s to refuse');
  client.terminate();

  const bare = await connect(wsUrl);
  const echoed = nextFrame(bare);
  bare.send(Buffer.from('{"setup":{"model":"live-voice"}}'), { binary: true });
  t.same(await echoed, { data: Buffer.from('{"setup":{"model":"gemini-live-up"}}'), binary: true }, 'a bare model name, in a binary frame, stays bare and binary');
  bare.terminate();
});

t.test('an x-live session drops a response filter that could hide its usageMetadata (fields, $fields) and keeps alt=json', async (t) => {
  const { upstream, wsUrl } = await startLiveRoute(harness, t);
  const client = await connect(`${wsUrl}&fields=serverContent&%24fields=serverContent&alt=json`);
  const seen = upstream.seen[0]!;
  const target = new URL(seen.url ?? '', 'ws://upstream.invalid');
  t.same([...target.searchParams.keys()].sort(), ['alt', 'model', 'session_hint'], 'no field mask parameter upstream');
  t.equal(target.searchParams.get('alt'), 'json');
  client.terminate();
});

t.test('an x-live session whose usageMetadata goes past the key\'s tokens quota is ended with 1008 quota_exceeded on both sides', async (t) => {
  const { gw, upstream, upstreamSession, wsUrl, key } = await startLiveRoute(harness, t, { total: { tokens: 100 } });
  const client = await connect(wsUrl);
  const closed = new Promise<[number, string]>((r) => client.once('close', (code, reason) => r([code, reason.toString()])));
  const ws = await upstreamSession();

  const first = nextFrame(client);
  ws.send(usageMessage(50, 10));
  await first;
  const still = nextFrame(client);
  client.send('still open');
  t.same(await still, { data: Buffer.from('echo:still open'), binary: false }, '60 tokens are within the quota: the session goes on');

  // The next turn's usage, in a binary frame, takes the session to 120 tokens.
  ws.send(Buffer.from(usageMessage(40, 20)), { binary: true });
  t.same(await closed, [1008, 'quota_exceeded'], 'the client is told why');
  t.equal(await eventually(() => upstream.closeCodes[0], 'the upstream side closed'), 1008);
  t.match(await logOf(gw, key.id, 101), { protocol: 'x-live', status: 101, error_code: 'quota_exceeded', usage: { input_tokens: 90, output_tokens: 30 } });
  t.equal(await upgradeStatus(wsUrl), 429, 'the next session is refused: the quota is used up');
  t.equal(upstream.seen.length, 1, 'and never reaches the upstream');
});
