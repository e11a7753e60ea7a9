import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { Gateway } from './helpers/data-plane-harness.ts';
import { createKey, credentialView, eventually, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { diskFullAfter } from './helpers/disk-full-after.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { okUpstream } from './helpers/upstream-behaviours.ts';

// A JSON body larger than bufferedJsonBytes (1 MiB by default) is spooled to a file. A spool file
// that cannot be opened or written is the gateway's failure, as for forms and passthrough bodies
// (spool-failures.test.ts): 503 spool_unavailable in the protocol's error shape, no upstream
// reached, no credential blamed, and the details (which name the gateway's disk) only in a
// warning to the operator.

/** Twice the default bufferedJsonBytes: spooled, never held whole. */
const CHAT = Buffer.from(JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] }));
/** Spool files fail once they would pass this many bytes. */
const DISK_BYTES = 500_000;

/** The warnings the process emits until the test ends: where the operator learns of the disk. */
function warnings(t: Test): string[] {
  const seen: string[] = [];
  const listener = (warning: Error) => seen.push(warning.message);
  process.on('warning', listener);
  t.teardown(() => void process.off('warning', listener));
  return seen;
}

/** A chat completion of CHAT; chunked (no content-length) when `chunked`. */
function postChat(gw: Gateway, keyValue: string, chunked: boolean): Promise<Response> {
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' };
  if (!chunked) return fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body: CHAT });
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < CHAT.length; at += 64 * 1024) controller.enqueue(CHAT.subarray(at, at + 64 * 1024));
      controller.close();
    },
  });
  return fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
}

async function setUp(t: Test) {
  const upstream = await okUpstream(t);
  const gw = await gateway(t);
  const seeded = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], secrets: ['sk-a', 'sk-b'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  return { upstream, gw, seeded, keyValue };
}

/** The answer, the record, the operator's warning, and that nothing upstream was touched. */
async function checkSpoolUnavailable(t: Test, { upstream, gw, seeded }: Awaited<ReturnType<typeof setUp>>, res: Response, seen: string[], cause: string) {
  t.equal(res.status, 503, 'the gateway is unavailable, not the upstream (502) nor a bug (500)');
  const body = (await res.json()) as { error: { message: string } };
  t.match(body, { error: { code: 'spool_unavailable', type: String, message: String } }, 'in the completions error shape');
  t.notMatch(body.error.message, cause, "the client is not told about the gateway's disk");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 503, error_code: 'spool_unavailable', attempt_count: 0 }, 'refused before any attempt');
  t.same(upstream.requests, [], 'no upstream request');
  for (const credential of seeded.credentials) {
    t.match(await credentialView(gw.store, seeded.group.id, credential.id), { state: 'active', cooldown_until: null }, `credential ${credential.id} is not blamed`);
  }
  await eventually(() => (seen.some((w) => w.includes('spooled request body failed') && w.includes(cause)) ? true : undefined), 'the warning naming the cause');
}

t.test('a chat body over bufferedJsonBytes with the spool directory replaced by a file: 503 spool_unavailable', async (t) => {
  const setup = await setUp(t);
  const seen = warnings(t);
  const spool = path.join(setup.gw.dataDir, 'spool');
  rmSync(spool, { recursive: true, force: true });
  writeFileSync(spool, 'not a directory');
  const res = await postChat(setup.gw, setup.keyValue, false);
  await checkSpoolUnavailable(t, setup, res, seen, 'ENOTDIR');
});

t.test('a chunked chat body that fills the disk mid-spool: 503 spool_unavailable, the spool directory left empty', async (t) => {
  const setup = await setUp(t);
  const seen = warnings(t);
  diskFullAfter(t, DISK_BYTES);
  const res = await postChat(setup.gw, setup.keyValue, true);
  await checkSpoolUnavailable(t, setup, res, seen, 'ENOSPC');
  const spool = path.join(setup.gw.dataDir, 'spool');
  await eventually(() => (readdirSync(spool).some((f) => f.startsWith('switchyard-body-')) ? undefined : true), 'the partial spool file removed');
});
