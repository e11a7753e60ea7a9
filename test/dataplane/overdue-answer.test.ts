import t from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, eventually, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';

// An upstream that took the request and answers after request_timeout_seconds is still
// working on it: the client gets 504 upstream_timeout at once, no credential cools down
// (the deadline is no fault of one: any other would wait as long), and the prompt is not sent
// again to another credential (a chat request is safe to replay, but it would be billed twice).

/** Far above the 1 s setting the test uses; only bounds a hung test. */
const BOUND_MS = 30_000;
/** Later than the 1 s setting: the gateway has given up by then. */
const LATE_MS = 5000;

const SECRETS = ['sk-first', 'sk-second', 'sk-third'];

function answer(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(completionJson('vendor-m'));
}

t.test('an answer overdue past request_timeout_seconds: one upstream request, 504 upstream_timeout at once, every credential still active', async (t) => {
  const upstream = await startUpstream((req, res) => {
    if (!req.body.toString().includes('think hard')) return answer(res);
    // Answers late, unless the gateway has closed the request by then.
    const late = setTimeout(() => answer(res), LATE_MS);
    res.on('close', () => clearTimeout(late));
  });
  t.teardown(() => upstream.close());
  const gw: Gateway = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  const { group, credentials } = await seedGroup(gw.server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: SECRETS });
  const { keyValue } = await createKey(gw.server.store, { protocols: ['x-completions'] });
  t.equal((await gw.api('PUT', '/api/settings', { body: { request_timeout_seconds: 1 } })).status, 200);
  const chat = (content: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
      body: chatBody('team-m', false, { messages: [{ role: 'user', content }] }),
    });

  const slow = await withTimeout(chat('think hard'), BOUND_MS, 'the gateway to give up on the late upstream');
  t.equal(slow.status, 504);
  t.match(await slow.json(), { error: { code: 'upstream_timeout' } });
  t.equal(upstream.requests.length, 1, 'the prompt went upstream once: no other credential was tried');
  const first = secretOf(upstream.requests[0]!);
  const firstId = credentials[SECRETS.indexOf(first)]!.id;

  const requestId = slow.headers.get('x-switchyard-request-id');
  const record = await eventually(async () => {
    const found = await gw.api('GET', `/api/logs/${requestId}`);
    return found.status === 200 ? (found.json as { data: Record<string, unknown> }).data : undefined;
  }, 'the log record');
  t.match(record, { status: 504, error_code: 'upstream_timeout', attempts: [{ credential_id: String(firstId), status: null, error_code: 'upstream_timeout' }] });
  t.equal((record.attempts as unknown[]).length, 1);

  const listed = await gw.api('GET', `/api/groups/${group.id}/credentials`);
  const states = (listed.json as { data: { id: number; state: string }[] }).data.map((c) => [c.id, c.state]);
  t.same(states, credentials.map((c) => [c.id, 'active']), 'no credential cooled down');

  // The next requests go round the Group's credentials as before, the one that timed out among them.
  const servedBy: string[] = [];
  for (let i = 0; i < SECRETS.length; i++) {
    const res = await chat('quick one');
    t.equal(res.status, 200);
    await res.text();
    servedBy.push(secretOf(upstream.requests.at(-1)!));
  }
  t.ok(servedBy.includes(first), `the credential whose answer was overdue serves again (${servedBy.join(', ')})`);
  t.same([...servedBy].sort(), [...SECRETS].sort(), 'every credential serves: none is cooling down');
});
