import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, createKey, deferred, eventually, seedGroup, withTimeout } from './helpers/dataplane-scenarios.ts';

// The last error answer is read whole (to mask the upstream secret) before it goes to the
// client. Its body, silent after its first bytes, is bounded by stream_idle_timeout_seconds as
// any plain body is, not by the upstream client's backstop (the larger of
// request_timeout_seconds and twice the idle timeout: 590 s with the defaults); and a client
// that leaves meanwhile calls the upstream request off, as while an earlier answer is read.

/** Far below the 3600 s request_timeout_seconds the tests set, so that only the fix ends the waits in time. */
const BOUND_MS = 30_000;

/** 500 is judged by its body in the completions style; 422 is not (read only as the client's answer). */
const STATUSES = [500, 422];

async function route(t: Test, status: number, seen = { answered: deferred(), closed: deferred() }): Promise<{ gw: Gateway; keyValue: string; keyId: number }> {
  const upstream = await startUpstream((_req, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write('{"error":'); // then nothing more
    seen.answered.resolve();
    res.on('close', () => seen.closed.resolve());
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  await seedGroup(gw.server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-only'] });
  const { keyValue, key } = await createKey(gw.server.store, { protocols: ['x-completions'] });
  return { gw, keyValue, keyId: key.id };
}

function chat(gw: Gateway, keyValue: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-m') });
}

async function onlyRecord(gw: Gateway, keyId: number): Promise<Record<string, unknown>> {
  return eventually(
    async () => {
      const listed = (await gw.api('GET', `/api/logs?access_key_id=${keyId}`)).json as { data: { items: Record<string, unknown>[] } };
      return listed.data.items[0];
    },
    'the log record',
    BOUND_MS,
  );
}

for (const status of STATUSES) {
  t.test(`the only credential's ${status} whose body stalls is answered at stream_idle_timeout_seconds, with its status`, async (t) => {
    const { gw, keyValue, keyId } = await route(t, status);
    t.equal((await gw.api('PUT', '/api/settings', { body: { stream_idle_timeout_seconds: 1, request_timeout_seconds: 3600 } })).status, 200);
    const res = await withTimeout(chat(gw, keyValue), BOUND_MS, 'the stalled error answer to be given up on');
    t.equal(res.status, status, "the upstream's status");
    t.equal(await res.text(), '', 'an empty body: the part that came is no whole answer to pass on');
    t.match(await onlyRecord(gw, keyId), { status, error_code: `upstream_${status}` });
  });

  t.test(`a client that leaves while the only credential's ${status} body stalls calls the upstream request off`, async (t) => {
    const seen = { answered: deferred(), closed: deferred() };
    const { gw, keyValue, keyId } = await route(t, status, seen);
    // Neither timeout ends the read within the bound: only the client's leaving does.
    t.equal((await gw.api('PUT', '/api/settings', { body: { stream_idle_timeout_seconds: 3600, request_timeout_seconds: 3600 } })).status, 200);
    const client = new AbortController();
    const answer = chat(gw, keyValue, client.signal).catch((err: Error) => err);
    // Leave once the gateway is reading the error body: a moment after the upstream sent its head.
    await withTimeout(seen.answered.promise, BOUND_MS, 'the upstream to answer');
    setTimeout(() => client.abort(), 300);
    t.type(await answer, Error, 'the client got no answer');
    await withTimeout(seen.closed.promise, BOUND_MS, 'the upstream request to be called off');
    t.match(await onlyRecord(gw, keyId), { status: 499, error_code: 'client_closed', client_aborted: true });
  });
}
