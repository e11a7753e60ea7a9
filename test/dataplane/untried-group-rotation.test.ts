import t from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';
import { chatBody, closedPortUrl, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';

// Once a request's attempts are spent, the Groups after it are not tried: their round-robin
// does not move a turn for it.

const MODELS = [{ external: 'team-chat', upstream: 'vendor-chat' }];

t.test("a Group the request never tries keeps its round-robin's turn", async (t) => {
  const upstream = await startUpstream((_req: RecordedUpstreamRequest, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] }));
  });
  t.teardown(() => upstream.close());
  const gw = await gateway(t);
  await gw.store.settings.save({ max_attempts_per_request: 1 });
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-x', 'sk-y'], priority: 1 });
  // Its upstream refuses connections: the failure is kept and the loop goes on to the next Group.
  await seedGroup(gw.store, { channel: 'ch02', baseUrl: await closedPortUrl(), models: MODELS, secrets: ['sk-a'], priority: 10 });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const chat = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
    await res.text();
    return res.status;
  };
  t.equal(await chat(), 502, 'the one attempt allowed fails: the other Group is not tried');
  // sk-a now cools down: the next request goes to the other Group, whose first turn is still its first credential's.
  t.equal(await chat(), 200);
  t.same(upstream.requests.map(secretOf), ['sk-x']);
});
