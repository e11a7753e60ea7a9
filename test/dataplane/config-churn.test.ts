import type { ServerResponse } from 'node:http';
import { secretFormsKept } from '../../src/dataplane/mask-upstream-secret.ts';
import t, { type Test } from 'tap';
import { CredentialPool } from '../../src/dataplane/credential-pool.ts';
import { quotaMeterFor } from '../../src/dataplane/quota-meter.ts';
import type { CredentialView } from '../../src/store/records.ts';
import { startDataPlane, startUpstream, type RecordedUpstreamRequest, type Upstream } from './helpers/data-plane-harness.ts';
import { createKey, deferred, eventually, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startHttpConnectProxy } from './helpers/http-connect-proxy.ts';

// Credentials, AccessKeys, Groups and proxy URLs created, used and deleted: what the data plane
// kept for them (decrypted secrets, round-robin weights, quota meters, upstream dispatchers)
// goes once the configuration changes, and what the remaining configuration uses stays.

/** The data plane's credential pools, seen as they first read a secret: the only way a test reaches one. */
const pools = new Set<CredentialPool>();
const accessOf = CredentialPool.prototype.accessOf;
CredentialPool.prototype.accessOf = function (this: CredentialPool, view: CredentialView) {
  pools.add(this);
  return accessOf.call(this, view);
};

const answer = (_req: RecordedUpstreamRequest, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"id":"c","object":"chat.completion","choices":[]}');
};

/** The data plane on real stores, with its credential pool and quota meter in the test's hands. */
async function startGateway(t: Test) {
  pools.clear();
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const pool = () => {
    t.equal(pools.size, 1, 'one credential pool serves the HTTP data plane');
    return [...pools][0]!;
  };
  return { ...gw, quota: quotaMeterFor(gw.logs), pool };
}

async function upstreams(t: Test, n: number, respond = answer): Promise<Upstream[]> {
  const started = await Promise.all(Array.from({ length: n }, () => startUpstream(respond)));
  t.teardown(() => Promise.all(started.map((u) => u.close())));
  return started;
}

function chat(url: string, keyValue: string, model: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [] }) });
}

async function chatStatus(url: string, keyValue: string, model: string): Promise<number> {
  const res = await chat(url, keyValue, model);
  await res.arrayBuffer();
  return res.status;
}

const QUOTA = { total: { requests: 1000 } };

t.test('deleted Groups, credentials, AccessKeys and proxy URLs leave no secret, weight, meter or dispatcher behind', async (t) => {
  const ROUNDS = 3;
  const [keeperUpstream, ...roundUpstreams] = await upstreams(t, ROUNDS + 1);
  const proxy = await startHttpConnectProxy();
  t.teardown(() => proxy.close());
  const gw = await startGateway(t);

  // What stays: one Group with one credential, reached directly, and one AccessKey with a quota.
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: keeperUpstream!.url, models: [{ external: 'keep', upstream: 'keep' }], secrets: ['sk-churn-keeper-000000000001'] });
  const keeper = await createKey(gw.store, { protocols: ['x-completions'], quota: QUOTA });
  t.equal(await chatStatus(gw.url, keeper.keyValue, 'keep'), 200);

  // Each round: a Group on its own upstream with two credentials, one of them behind its own proxy URL, and a metered key.
  const removed: CredentialView[] = [];
  const rounds: { groupId: number; keyId: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const model = `m${i}`;
    const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: roundUpstreams[i]!.url, models: [{ external: model, upstream: model }], secrets: [`sk-churn-${i}-a-00000000000`, `sk-churn-${i}-b-00000000000`] });
    await gw.store.credentials.update(group.id, credentials[0]!.id, { proxy_url: `http://u${i}:p@127.0.0.1:${proxy.port}` });
    const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'], quota: QUOTA });
    // Equal weights take turns: two requests use both credentials.
    t.equal(await chatStatus(gw.url, keyValue, model), 200);
    t.equal(await chatStatus(gw.url, keyValue, model), 200);
    removed.push(...(await gw.store.credentials.list(group.id)));
    rounds.push({ groupId: group.id, keyId: key.id });
  }
  t.equal(proxy.tunnels.length, ROUNDS, 'each round reached its upstream once through its proxy');
  t.equal(roundUpstreams.reduce((n, u) => n + u.requests.length, 0), 2 * ROUNDS);
  const pool = gw.pool();
  // Before the deletions, everything used is kept: the figures the test checks shrink are real.
  t.same(pool.diagnosticSizes(), { secrets: 2 * ROUNDS + 1, rotations: ROUNDS });
  t.equal(gw.quota.diagnosticSizes().meters, ROUNDS + 1);
  t.match(gw.upstream.diagnosticSizes(), { pools: ROUNDS + 1, proxies: ROUNDS });
  for (const view of removed) t.ok(pool.cachedAccess(view), `credential ${view.id}'s secret is cached while it exists`);

  for (const { groupId, keyId } of rounds) {
    t.ok(await gw.store.groups.delete(groupId));
    t.ok(await gw.store.accessKeys.delete(keyId));
  }
  // The next request sees the new configuration.
  t.equal(await chatStatus(gw.url, keeper.keyValue, 'keep'), 200);

  for (const view of removed) t.equal(pool.cachedAccess(view), undefined, `deleted credential ${view.id}'s secret is no longer kept`);
  t.same(pool.diagnosticSizes(), { secrets: 1, rotations: 0 }, 'only the keeper credential\'s secret is kept');
  await eventually(() => (gw.quota.diagnosticSizes().meters === 1 ? true : undefined), 'the deleted keys\' meters to go');
  t.equal(gw.quota.diagnosticSizes().meters, 1, 'the keeper key keeps its meter');
  t.match(gw.upstream.diagnosticSizes(), { pools: 1, proxies: 0 }, 'only the keeper upstream\'s pool is kept');
  await eventually(() => (gw.upstream.diagnosticSizes().closing === 0 ? true : undefined), 'the released dispatchers to close');
  t.equal(await chatStatus(gw.url, keeper.keyValue, 'keep'), 200, 'the keeper route still works');
  t.equal(keeperUpstream!.requests.length, 3);
});

t.test('a rotated secret that is not used again is not kept decrypted', async (t) => {
  const [rotatedUpstream, otherUpstream] = await upstreams(t, 2);
  const gw = await startGateway(t);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: rotatedUpstream!.url, models: [{ external: 'r', upstream: 'r' }], secrets: ['sk-churn-rotated-old-0000001'] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: otherUpstream!.url, models: [{ external: 'o', upstream: 'o' }], secrets: ['sk-churn-other-00000000001'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal(await chatStatus(gw.url, keyValue, 'r'), 200);
  const before = credentials[0]!;
  t.ok(gw.pool().cachedAccess(before), 'the secret is cached after its use');
  t.ok(secretFormsKept('sk-churn-rotated-old-0000001'), 'its masking forms were made for the answer');

  await gw.store.credentials.update(group.id, before.id, { values: { api_key: 'sk-churn-rotated-new-0000002' }, secretFields: ['api_key'] });
  // A request of another Group sees the new configuration; the rotated credential is not used.
  t.equal(await chatStatus(gw.url, keyValue, 'o'), 200);
  t.equal(gw.pool().cachedAccess(before), undefined, 'the old revision\'s secret is gone');
  t.notOk(secretFormsKept('sk-churn-rotated-old-0000001'), 'and so are the masking forms made of it');
  t.ok(secretFormsKept('sk-churn-other-00000000001'), 'the other Group\'s forms are kept');
  t.same(gw.pool().diagnosticSizes(), { secrets: 1, rotations: 0 }, 'only the other Group\'s secret is kept');
  t.match(gw.upstream.diagnosticSizes(), { pools: 2 }, 'both Groups still exist: both pools are kept');

  t.equal(await chatStatus(gw.url, keyValue, 'r'), 200);
  t.equal(rotatedUpstream!.requests.at(-1)!.headers.authorization, 'Bearer sk-churn-rotated-new-0000002', 'the new secret is read and used');
});

t.test('a request in flight on a released dispatcher finishes, and the next request to its origin gets a new one', async (t) => {
  const release = deferred();
  const [slowUpstream, keeperUpstream] = await upstreams(t, 2, async (req, res) => {
    if (!req.body.toString().includes('"slow"')) return answer(req, res);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first part;');
    await release.promise;
    res.end('second part');
  });
  const gw = await startGateway(t);
  const slow = await seedGroup(gw.store, { channel: 'ch02', baseUrl: slowUpstream!.url, models: [{ external: 'slow', upstream: 'slow' }], secrets: ['sk-churn-slow-000000000001'] });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: keeperUpstream!.url, models: [{ external: 'keep', upstream: 'keep' }], secrets: ['sk-churn-keeper-000000000002'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });

  const res = await chat(gw.url, keyValue, 'slow');
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value, { stream: true });

  // The slow Group goes while its answer is still coming; a request of the other Group sees that.
  t.ok(await gw.store.groups.delete(slow.group.id));
  t.equal(await chatStatus(gw.url, keyValue, 'keep'), 200);
  t.match(gw.upstream.diagnosticSizes(), { pools: 1, closing: 1 }, 'the slow origin\'s pool is released but still finishing');

  release.resolve();
  for (;;) {
    const { value, done } = await withTimeout(reader.read(), 5000, 'the rest of the answer');
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  t.equal(text, 'first part;second part', 'the answer in flight arrived whole');
  await eventually(() => (gw.upstream.diagnosticSizes().closing === 0 ? true : undefined), 'the released pool to close');

  // The same origin again: a new Group on it is served by a new pool, not the closed one.
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: slowUpstream!.url, models: [{ external: 'again', upstream: 'again' }], secrets: ['sk-churn-again-00000000001'] });
  t.equal(await chatStatus(gw.url, keyValue, 'again'), 200);
  t.equal(slowUpstream!.requests.length, 2);
  t.match(gw.upstream.diagnosticSizes(), { pools: 2 });
});

t.test('a deleted AccessKey\'s meter goes by a reading of the ids: no copy of every key record per change', async (t) => {
  const [upstream] = await upstreams(t, 1);
  const gw = await startGateway(t);
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream!.url, models: [{ external: 'keep', upstream: 'keep' }], secrets: ['sk-churn-ids-000000000001'] });
  const keeper = await createKey(gw.store, { protocols: ['x-completions'], quota: QUOTA });
  const doomed = await createKey(gw.store, { protocols: ['x-completions'], quota: QUOTA });
  t.equal(await chatStatus(gw.url, keeper.keyValue, 'keep'), 200);
  t.equal(await chatStatus(gw.url, doomed.keyValue, 'keep'), 200);
  t.equal(gw.quota.diagnosticSizes().meters, 2);
  // Every record copied (their lists of models and Groups too) per change: at 10,000 keys, 100 to 200 ms of a blocked event loop.
  let listed = 0;
  const list = gw.store.accessKeys.list.bind(gw.store.accessKeys);
  gw.store.accessKeys.list = () => {
    listed++;
    return list();
  };
  t.ok(await gw.store.accessKeys.delete(doomed.key.id));
  t.equal(await chatStatus(gw.url, keeper.keyValue, 'keep'), 200);
  await eventually(() => (gw.quota.diagnosticSizes().meters === 1 ? true : undefined), 'the deleted key\'s meter to go');
  t.equal(listed, 0, 'no AccessKey list was read for the pruning');
});
