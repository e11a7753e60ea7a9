import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startDataPlane, startUpstream, type Gateway, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';

// Failover past an error answer whose body stalls (issue 4 item 3: an upstream that stalls is
// cut at the configurable idle timeout). The request timeout, and with it the upstream client's
// body timeout, is far longer than the tap timeout of each test: a read bounded by those alone
// never finishes in time, and the test fails by its timeout.

const IDLE_MS = 1000;
const REQUEST_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 20_000;
const MODELS = [{ external: 'team-chat', upstream: 'vendor-chat' }];

function secretOf(req: RecordedUpstreamRequest): string {
  return String(req.headers.authorization ?? '').replace(/^Bearer /, '');
}

/** 503 declaring a 100-byte body, of which only the first bytes ever come. */
function stalled503(res: ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/json', 'content-length': '100' });
  res.write('{"error":');
}

function ok(res: ServerResponse, req: RecordedUpstreamRequest): void {
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': `ok-${secretOf(req).replace('sk-', 'cred-')}` });
  res.end(completionJson(String(JSON.parse(req.body.toString()).model)));
}

async function setup(t: Test, behaviours: Record<string, (res: ServerResponse, req: RecordedUpstreamRequest) => void>, idleTimeoutMs: number) {
  const open = new Set<ServerResponse>();
  const upstream = await startUpstream((req, res) => {
    open.add(res);
    (behaviours[secretOf(req)] ?? ok)(res, req);
  });
  const gw: Gateway = await startDataPlane({ streamIdleTimeoutMs: idleTimeoutMs, headersTimeoutMs: REQUEST_TIMEOUT_MS });
  t.teardown(async () => {
    for (const res of open) res.socket?.destroy();
    await gw.close();
    await upstream.close();
  });
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: MODELS, secrets: ['sk-a', 'sk-b'] });
  const { keyValue, key } = await createKey(gw.store, { protocols: ['x-completions'] });
  return { upstream, gw, group, credentials, keyValue, key };
}

t.test('a failing credential whose error body stalls is left at the idle timeout: the next credential answers 200', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { upstream, gw, group, credentials, keyValue } = await setup(t, { 'sk-a': stalled503 }, IDLE_MS);
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  t.equal(res.status, 200, 'the second credential serves');
  t.equal(res.headers.get('request-id'), 'ok-cred-b');
  await res.text();
  t.same(upstream.requests.map(secretOf), ['sk-a', 'sk-b']);
  const requestId = res.headers.get('x-switchyard-request-id')!;
  let record = undefined;
  for (let i = 0; i < 200 && record === undefined; i++) {
    await gw.logs.flush();
    record = await gw.logs.get(requestId);
    if (record === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.match(record, { status: 200, credential_id: String(credentials[1]!.id) });
  t.same(
    record?.attempts.map((a) => [a.credential_id, a.group_id, a.status, a.error_code]),
    [
      [String(credentials[0]!.id), String(group.id), 503, 'upstream_503'],
      [String(credentials[1]!.id), String(group.id), 200, null],
    ],
    'the stalled attempt is recorded by the status it answered',
  );
});

t.test('a client that leaves while a failing credential\'s error body stalls is noticed: 499, no further attempt', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  // The idle timeout as long as the request timeout: only noticing the client ends the read in time.
  // The client leaves as the 503's head goes out: the gateway may learn of it before, while or
  // after it writes the credential's verdict, and must notice it in each case.
  const client = new AbortController();
  const { upstream, gw, credentials, keyValue, key } = await setup(
    t,
    {
      'sk-a': (res) => {
        stalled503(res);
        client.abort();
      },
    },
    REQUEST_TIMEOUT_MS,
  );
  const answer = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: client.signal, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') }).catch((err: Error) => err);
  t.type(await answer, Error, 'the client got no answer');
  let record = undefined;
  for (let i = 0; i < 600 && record === undefined; i++) {
    await gw.logs.flush();
    const [item] = (await gw.logs.list({ access_key_id: key.id }, { limit: 2 })).items;
    if (item) record = await gw.logs.get(item.request_id);
    else await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.match(record, { status: 499, error_code: 'client_closed', client_aborted: true, credential_id: String(credentials[0]!.id) });
  // Its status is the 503's, or none when the client's leaving reached the gateway before the head.
  t.same(record?.attempts.map((a) => a.credential_id), [String(credentials[0]!.id)], 'one attempt');
  t.ok([503, null].includes(record?.attempts[0]?.status ?? -1), 'the attempt ended with the 503 or before it');
  t.same(upstream.requests.map(secretOf), ['sk-a'], 'no further credential was tried');
});
