import t, { type Test } from 'tap';
import { startDataPlane, seedRoute } from './helpers/data-plane-harness.ts';
import { closeOf, connect, REALTIME_PATH, startWsUpstream } from './helpers/ws-upstream.ts';

async function upstreamUrlOf(t: Test, query: (keyValue: string) => string, upstreamModel: string): Promise<{ url: string; keyValue: string }> {
  const upstream = await startWsUpstream();
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: upstreamModel }], protocols: ['x-suite'] });
  const client = await connect(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}${query(keyValue)}`);
  const closed = closeOf(client);
  client.close(1000);
  await closed;
  return { url: upstream.seen[0]!.url ?? '', keyValue };
}

t.test('the upgrade\'s query reaches the upstream as sent: each parameter\'s spelling kept, credentials out, the model replaced in its place', async (t) => {
  const { url, keyValue } = await upstreamUrlOf(t, (k) => `?prompt=a%20b&model=voice&%6Bey=${k}&x=%2F&y=a+b&emptyv&access_token=ya29.client&z=%7E&model=other`, 'voice up/1');
  t.equal(url, `${REALTIME_PATH}?prompt=a%20b&model=voice%20up%2F1&x=%2F&y=a+b&emptyv&z=%7E`);
  t.notOk(url.includes(keyValue));
});

t.test('a key after a doubled ? is removed, and the model that follows it is replaced', async (t) => {
  const { url } = await upstreamUrlOf(t, (k) => `??key=${k}&model=voice&n=~`, 'voice-up');
  t.equal(url, `${REALTIME_PATH}?model=voice-up&n=~`);
});

t.test('an empty key parameter before the AccessKey does not hide it; neither goes upstream', async (t) => {
  const { url } = await upstreamUrlOf(t, (k) => `?key=&model=voice&key=${k}&n=1`, 'voice-up');
  t.equal(url, `${REALTIME_PATH}?model=voice-up&n=1`);
});

t.test('a Group mapping the model to a name with a lone surrogate is skipped, no credential blamed: the next Group takes the session', async (t) => {
  const upstream = await startWsUpstream();
  const gw = await startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const bad = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'v\ud800' }], protocols: ['x-suite'], priority: 10 });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'voice', upstream: 'voice-up' }], protocols: ['x-suite'], priority: 1 });
  const client = await connect(`${gw.url.replace('http', 'ws')}${REALTIME_PATH}?model=voice&key=${keyValue}`);
  const closed = closeOf(client);
  client.close(1000);
  await closed;
  t.same(upstream.seen.map((s) => s.url), [`${REALTIME_PATH}?model=voice-up`], "only the second Group's mapping went upstream");
  const [credential] = await gw.store.credentials.list(bad.group.id);
  t.match(credential, { state: 'active', cooldown_until: null }, "the first Group's credential is not blamed");
});
