import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, deferred, withTimeout } from './helpers/dataplane-scenarios.ts';

// A verdict that changes nothing about the credential writes nothing: the config file keeps
// its inode (every write replaces it by a rename) and its contents (updated_at would move, the
// clock being advanced before each request).

const MODEL = 'chat-model';

type Respond = (res: ServerResponse) => void | Promise<void>;

function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message: `upstream says ${status}` } }));
}

async function setup(t: Test, respond: Respond) {
  const upstream = await startUpstream((_req, res) => respond(res));
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], { base_url: upstream.url });
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-noop-verdict-000000001' });
  const key = await seedAccessKey(gw);
  const path = `/api/groups/${groupId}/credentials/${imported.json.data.created[0].id as number}`;
  const file = join(gw.dataDir, 'config.json');
  const snapshot = () => ({ ino: statSync(file).ino, text: readFileSync(file, 'utf8') });
  const written = () => (JSON.parse(readFileSync(file, 'utf8')) as { credentials: Array<{ cooldown_until: string | null }> }).credentials[0]!.cooldown_until;
  return { gw, key, path, snapshot, written };
}

async function chat(gw: Gateway, keyValue: string): Promise<number> {
  gw.clock.advance(1);
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
  await res.text();
  return res.status;
}

t.test('a cooldown ending now (credential_cooldown_seconds 0) writes nothing', async (t) => {
  // A 429 without a hint: the cooldown credential_cooldown_seconds gives (a 5xx's is server_error_cooldown_seconds).
  const { gw, key, snapshot } = await setup(t, (res) => answer(res, 429));
  t.equal((await gw.api('PUT', '/api/settings', { body: { credential_cooldown_seconds: 0 } })).status, 200);
  const before = snapshot();
  for (let i = 0; i < 3; i++) t.equal(await chat(gw, key.value), 429);
  t.same(snapshot(), before, 'the config file was not rewritten');
});

t.test('retry-after-ms 0 writes nothing', async (t) => {
  const { gw, key, path, snapshot } = await setup(t, (res) => answer(res, 429, { 'retry-after-ms': '0' }));
  const before = snapshot();
  t.equal(await chat(gw, key.value), 429);
  t.same(snapshot(), before, 'the config file was not rewritten');
  t.equal((await gw.api('GET', path)).json.data.state, 'active');
});

/** Two requests on their way to the upstream at once, each answered when told. */
async function twoInFlight(t: Test, answers: [Respond, Respond]) {
  const arrived = [deferred(), deferred()];
  const release = [deferred(), deferred()];
  let n = 0;
  const ctx = await setup(t, async (res) => {
    const i = n++;
    arrived[i]!.resolve();
    await release[i]!.promise;
    await answers[i]!(res);
  });
  const first = chat(ctx.gw, ctx.key.value);
  await withTimeout(arrived[0]!.promise, 5000, 'the first request');
  const second = chat(ctx.gw, ctx.key.value);
  await withTimeout(arrived[1]!.promise, 5000, 'the second request');
  return {
    ...ctx,
    answerFirst: async () => {
      release[0]!.resolve();
      return first;
    },
    answerSecond: async () => {
      ctx.gw.clock.advance(1);
      release[1]!.resolve();
      return second;
    },
  };
}

t.test('a shorter cooldown than the stored one changes nothing', async (t) => {
  const run = await twoInFlight(t, [(res) => answer(res, 429, { 'retry-after': '3600' }), (res) => answer(res, 429, { 'retry-after': '60' })]);
  t.equal(await run.answerFirst(), 429);
  const until = (await run.gw.api('GET', run.path)).json.data.cooldown_until;
  t.ok(until, 'the first cooldown is taken');
  t.equal(await run.answerSecond(), 429);
  t.equal((await run.gw.api('GET', run.path)).json.data.cooldown_until, until, 'the hour stands');
  // Cooldowns are written with the others of their window, or at shutdown.
  await run.gw.stop();
  t.equal(run.written(), until, 'and is what the file holds');
});

t.test('a disable of a credential already disabled writes nothing', async (t) => {
  const run = await twoInFlight(t, [(res) => answer(res, 401), (res) => answer(res, 403)]);
  t.equal(await run.answerFirst(), 401);
  const disabled = run.snapshot();
  t.equal(await run.answerSecond(), 403);
  t.same(run.snapshot(), disabled, 'the second verdict wrote nothing');
  t.match((await run.gw.api('GET', run.path)).json.data, { state: 'disabled', disabled_reason: 'upstream answered 401' }, 'the first reason stands');
});
