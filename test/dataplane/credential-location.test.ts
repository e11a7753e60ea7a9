import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { CHANNEL_IDS, CREDENTIAL_KINDS } from '../../src/generated/index.ts';
import type { ConfigStore } from '../../src/store/config-store.ts';
import { startDataPlane, startUpstream, type Gateway, type RecordedUpstreamRequest, type Upstream } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, staticKindOf } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';

// Spec section 5.7: the credential kinds "AccessKey + base URL", "API key + base URL" and
// "API key + custom endpoint" carry the upstream's location with the key. A credential's key
// goes to that location, never to another server; a credential without one (only possible
// outside the management plane, which fills it from the Group) uses the Group's base_url.

const MODELS = [{ external: 'team-chat', upstream: 'vendor-chat' }];

/** Static-key channels whose credential kind names the upstream's location, and that field's name. */
const LOCATED = CHANNEL_IDS.flatMap((channel) => {
  const kind = staticKindOf(channel);
  const field = kind === undefined ? undefined : CREDENTIAL_KINDS[kind].fields.find((f) => f.name === 'base_url' || f.name === 'endpoint');
  return kind === undefined || field === undefined ? [] : [{ channel, kind, field: field.name, secretField: CREDENTIAL_KINDS[kind].fields.find((f) => f.secret && f.required)!.name }];
});

function bearerOf(req: RecordedUpstreamRequest): string | undefined {
  return req.headers.authorization?.replace(/^Bearer /, '');
}

async function upstream(t: Test, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void = (_req, res) => ok(res)): Promise<Upstream> {
  const u = await startUpstream(respond);
  t.teardown(() => u.close());
  return u;
}

function ok(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(completionJson('vendor-chat'));
}

async function gateway(t: Test): Promise<Gateway> {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  return gw;
}

/** A Group at `groupUrl` with one credential per entry: the secret and, when given, its own location. */
async function seed(store: ConfigStore, located: (typeof LOCATED)[number], groupUrl: string, credentials: Array<{ secret: string; location?: string }>) {
  const group = await store.groups.create({ name: `g-${located.channel}`, channel: located.channel, base_url: groupUrl, models: MODELS });
  const outcomes = await store.credentials.createMany(
    group.id,
    credentials.map((c) => ({
      kind: located.kind,
      values: { [located.secretField]: c.secret, ...(c.location === undefined ? {} : { [located.field]: c.location }) },
      secretFields: [located.secretField],
    })),
  );
  return { group, ids: outcomes.map((o) => ('created' in o ? o.created.id : -1)) };
}

async function chat(gw: Gateway, keyValue: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  await res.text();
  return res.status;
}

t.test('the channels whose credential kind names a location are found in the manifest', async (t) => {
  // Spec section 2: ch31-ch34 take a base URL with the key, ch35 a custom endpoint.
  t.same(
    LOCATED.map((l) => [l.channel, l.field]),
    [
      ['ch31', 'base_url'],
      ['ch32', 'base_url'],
      ['ch33', 'base_url'],
      ['ch34', 'base_url'],
      ['ch35', 'endpoint'],
    ],
  );
});

for (const located of LOCATED) {
  t.test(`${located.channel}: a credential's own ${located.field} gets its key; one without uses the Group's base_url`, async (t) => {
    const own = await upstream(t);
    const groups = await upstream(t);
    const gw = await gateway(t);
    await seed(gw.store, located, groups.url, [{ secret: 'sk-cred-a', location: `${own.url}/own-prefix` }, { secret: 'sk-cred-b' }]);
    const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
    // Equal weights take turns: two requests for each credential, the first of each made
    // before its secret is cached, the second on the cached path.
    for (let i = 0; i < 4; i++) t.equal(await chat(gw, keyValue), 200, `request ${i + 1} answered`);
    t.same(
      own.requests.map((r) => [r.url, bearerOf(r)]),
      [
        ['/own-prefix/v1/chat/completions', 'sk-cred-a'],
        ['/own-prefix/v1/chat/completions', 'sk-cred-a'],
      ],
      `the credential's ${located.field} (with its path prefix) received its key`,
    );
    t.same(
      groups.requests.map((r) => [r.url, bearerOf(r)]),
      [
        ['/v1/chat/completions', 'sk-cred-b'],
        ['/v1/chat/completions', 'sk-cred-b'],
      ],
      "the Group's base_url received only the credential without a location",
    );
  });
}

const ch32 = LOCATED.find((l) => l.channel === 'ch32')!;

t.test('failover moves to the next credential at its own address', async (t) => {
  const own = await upstream(t, (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"overloaded"}}');
  });
  const groups = await upstream(t);
  const gw = await gateway(t);
  await seed(gw.store, ch32, groups.url, [{ secret: 'sk-cred-a', location: own.url }, { secret: 'sk-cred-b' }]);
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal(await chat(gw, keyValue), 200, 'answered by the second credential');
  t.same(own.requests.map(bearerOf), ['sk-cred-a'], "the first attempt went to the first credential's address");
  t.same(groups.requests.map(bearerOf), ['sk-cred-b'], "the failover attempt went to the Group's base_url");
});

t.test("a credential's changed location takes effect on the next request", async (t) => {
  const before = await upstream(t);
  const after = await upstream(t);
  const groups = await upstream(t);
  const gw = await gateway(t);
  const { group, ids } = await seed(gw.store, ch32, groups.url, [{ secret: 'sk-cred-a', location: before.url }]);
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  t.equal(await chat(gw, keyValue), 200);
  t.equal(await chat(gw, keyValue), 200, 'the second request on the cached secret');
  await gw.store.credentials.update(group.id, ids[0]!, { values: { api_key: 'sk-cred-a', base_url: after.url }, secretFields: ['api_key'] });
  t.equal(await chat(gw, keyValue), 200);
  t.same(before.requests.map(bearerOf), ['sk-cred-a', 'sk-cred-a'], 'the old address until the change');
  t.same(after.requests.map(bearerOf), ['sk-cred-a'], 'the new address after it');
  t.equal(groups.requests.length, 0, "the Group's base_url never received the key");
});

t.test("model discovery lists through the credential's own base_url", async (t) => {
  const AUTH_KEY = 'location-test-auth-key-0123456789abcdef';
  const list = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'vendor-chat' }, { id: 'vendor-other' }] }));
  };
  const own = await upstream(t, (_req, res) => list(res));
  const groups = await upstream(t, (_req, res) => list(res));
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const { group } = await seed(server.store, ch32, groups.url, [{ secret: 'sk-cred-a', location: `${own.url}/own-prefix` }]);
  const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
  const text = await res.text();
  t.equal(res.status, 200, text);
  t.same(
    own.requests.map((r) => [r.url, bearerOf(r)]),
    [['/own-prefix/v1/models', 'sk-cred-a']],
    "listed at the credential's base_url with its key",
  );
  t.equal(groups.requests.length, 0, "the Group's base_url received nothing");
});
