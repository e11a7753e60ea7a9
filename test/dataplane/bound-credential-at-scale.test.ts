import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { CredentialPool } from '../../src/dataplane/credential-pool.ts';
import { forwardNative, type ForwardDeps } from '../../src/dataplane/forward-native.ts';
import type { Candidate } from '../../src/dataplane/plan-candidates.ts';
import { OPERATIONS } from '../../src/generated/index.ts';
import type { CredentialStore } from '../../src/store/config-store.ts';
import type { CredentialView, GroupRecord } from '../../src/store/records.ts';
import type { UpstreamClient } from '../../src/upstream/index.ts';
import { StreamOptionsRefusals } from '../../src/dataplane/stream-options-refused.ts';
import { counted } from './helpers/counted-reads.ts';
import { coolingView } from './helpers/cooling-view.ts';

// A request bound to one credential of a large Group (the holder of a stored response or voice)
// reads the Group once per snapshot, as an unbound pick does: not once or twice per request.

const POOL = 2000;

t.test('requests bound to a cooling credential of 2,000 are refused with its hint, reading the Group once per snapshot', async (t) => {
  const now = Date.now();
  // Every credential cooling (none is sent to): the bound one recovers in 30 s.
  const cooling = (i: number) => coolingView(i + 1, new Date(now + (i === 41 ? 30_000 : 90_000)).toISOString());
  let snapshot = counted(Array.from({ length: POOL }, (_, i) => cooling(i)));
  const pool = new CredentialPool({} as CredentialStore);
  const group = { id: 1, name: 'big', channel: 'ch02', base_url: 'http://127.0.0.1:1', enabled: true, models: [] } as unknown as GroupRecord;
  const candidate = { group, upstream_model: null, included: true } as unknown as Candidate;
  const deps: ForwardDeps = {
    upstream: {} as UpstreamClient,
    pool,
    credentialsOf: () => snapshot.array,
    credentialNow: async () => undefined,
    now: () => now,
    idleTimeoutMs: 5000,
    headersTimeoutMs: 5000,
    cooldowns: { credential_cooldown_seconds: 60, server_error_cooldown_seconds: 5 },
    maxAttempts: 3,
    proxyFor: () => undefined,
    streamOptionsRefusals: new StreamOptionsRefusals(),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const bound = Number(new URL(req.url!, 'http://x').searchParams.get('bound'));
    void forwardNative(
      { req, res, requestId: 'req-1', op: OPERATIONS['responses-retrieve'], params: { response_id: 'resp_1' }, search: '', body: { kind: 'none' }, candidates: [candidate], streamStyle: 'completions', usageStyle: undefined, streamRequested: false, onlyCredentialId: bound },
      deps,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/responses/resp_1`;
  const get = async (bound: number) => {
    const res = await fetch(`${base}?bound=${bound}`);
    const body = (await res.json()) as { error: { code: string } };
    return { status: res.status, code: body.error.code, retryAfter: res.headers.get('retry-after') };
  };

  const first = await get(42);
  t.same(first, { status: 503, code: 'no_available_credential', retryAfter: '30' }, "refused with the bound credential's own recovery");
  for (let i = 0; i < 200; i++) await get(42);
  t.ok(snapshot.reads() <= POOL, `201 bound requests read the ${POOL} credentials once (${snapshot.reads()} reads)`);
  const gone = await get(POOL + 7);
  t.equal(gone.status, 503, 'a credential gone from the Group: refused');
  t.equal(gone.retryAfter, null, 'with no hint of when');
  for (let i = 0; i < 100; i++) await get(POOL + 7);
  t.ok(snapshot.reads() <= POOL, `nor do requests bound to a gone credential read it again (${snapshot.reads()} reads)`);

  // A new snapshot (the configuration changed): its array is read once, and the bound credential's state there is what counts.
  snapshot = counted(Array.from({ length: POOL }, (_, i) => (i === 41 ? coolingView(42, new Date(now + 10_000).toISOString()) : cooling(i))));
  t.same(await get(42), { status: 503, code: 'no_available_credential', retryAfter: '10' }, "the new snapshot's cooldown");
  for (let i = 0; i < 200; i++) await get(42);
  t.ok(snapshot.reads() <= POOL, `the new snapshot's array is read once too (${snapshot.reads()} reads)`);
});
