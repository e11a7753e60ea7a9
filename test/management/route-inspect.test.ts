import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { quotaMeterFor } from '../../src/dataplane/quota-meter.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import { logRecord } from './support/log-records.ts';
import { AUTH_KEY, seedAccessKey, startGateway, type Gateway } from './support/gateway.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

const inspect = (gw: Gateway, body: Record<string, unknown>) => gw.api('POST', '/api/route/inspect', { body: { protocol: 'x-completions', external_model: 'chat-model', ...body } });

async function group(gw: Gateway, body: Record<string, unknown>, keys = 'sk-inspect-000000001'): Promise<number> {
  const id = (await gw.create('/api/groups', { name: 'g', channel: 'ch02', base_url: 'https://upstream.test', models: [{ external: 'chat-model', upstream: 'vendor-chat' }], ...body })).json.data.id;
  if (keys) await gw.create(`/api/groups/${id}/credentials/import`, { credentials: keys });
  return id;
}

/** `switchyard inspect` from the sources, as an operator runs it. */
const cli = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, ['--import=tsx', '--input-type=module', '-e', "const { runInspect } = await import('./src/cli/commands/inspect.ts'); process.exitCode = await runInspect(process.argv.slice(1));", '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });

t.test('a routable request: candidates with route mode, upstream model, tiers, shares and credentials', async (t) => {
  const gw = await startGateway(t);
  const a = await group(gw, { name: 'a', priority: 10, weight: 1 });
  const b = await group(gw, { name: 'b', priority: 10, weight: 3 }, 'sk-inspect-000000002');
  const c = await group(gw, { name: 'c', priority: 1 }, 'sk-inspect-000000003');
  const key = await seedAccessKey(gw);
  const res = await inspect(gw, { access_key_id: key.id });
  t.equal(res.status, 200);
  const r = res.json.data;
  t.match(r, { routable: true, reason_code: null, request: { protocol: 'x-completions', operation: 'chat-completions', external_model: 'chat-model', access_key_id: key.id } });
  t.same(r.candidates.map((x: { group_id: number }) => x.group_id), [b, a, c], 'routing order: priority, then weight');
  const byId = Object.fromEntries(r.candidates.map((x: { group_id: number }) => [x.group_id, x]));
  t.match(byId[a], { channel: 'ch02', upstream_model: 'vendor-chat', included: true, reason_code: null, tier: 0, share_in_tier: 0.25, route: { ok: true, declared: 'N', effective: 'native' } });
  t.match(byId[b], { tier: 0, share_in_tier: 0.75 });
  t.match(byId[c], { tier: 1, share_in_tier: 1 });
  t.match(byId[a].credentials, [{ kind: 'api_key', state: 'active', available: true, reason_code: null }]);
});

t.test('every reason a request is not routable', async (t) => {
  const logs = new MemoryLogStore();
  const gw = await startGateway(t, { logStore: logs });
  const g = await group(gw, {});
  const key = await seedAccessKey(gw);
  const reason = async (body: Record<string, unknown>) => (await inspect(gw, { access_key_id: key.id, ...body })).json.data;

  t.match(await reason({ external_model: 'unknown-model' }), { routable: false, reason_code: 'model_not_visible', candidates: [] });
  t.match(await reason({ protocol: 'x-messages' }), { routable: false, reason_code: 'protocol_not_allowed', access_key: { protocol_allowed: false } });

  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { models: ['something-else'] } });
  t.match(await reason({}), { reason_code: 'model_not_visible', candidates: [{ included: false, reason_code: 'model_not_visible' }] });
  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { models: null } });

  const credentialId = (await gw.api('GET', `/api/groups/${g}/credentials`)).json.data[0].id;
  await gw.api('POST', `/api/groups/${g}/credentials/${credentialId}/disable`, { body: { reason: 'revoked upstream' } });
  const noCredential = await reason({});
  t.match(noCredential, { routable: false, reason_code: 'no_available_credential', candidates: [{ reason_code: 'no_available_credential', credentials: [{ available: false, reason_code: 'credential_disabled', disabled_reason: 'revoked upstream' }] }] });
  await gw.api('POST', `/api/groups/${g}/credentials/${credentialId}/enable`);

  await gw.api('PUT', `/api/groups/${g}/settings`, { body: { enabled: false } });
  t.match(await reason({}), { reason_code: 'model_not_visible', candidates: [{ reason_code: 'group_disabled' }] }, 'a disabled Group serves no model');
  await gw.api('PUT', `/api/groups/${g}/settings`, { body: { enabled: true } });

  const ch01 = await group(gw, { name: 'decisions-only', channel: 'ch01', models: [{ external: 'decider' }] }, 'sk-inspect-000000009');
  t.match(await reason({ external_model: 'decider' }), { reason_code: 'not_a_conversation_channel', candidates: [{ group_id: ch01, route: { ok: false, reason_code: 'not_a_conversation_channel', note: 7 } }] });

  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { quota: { total: { requests: 2 } } } });
  // As the data plane writes a record: its quota meter, which inspection reads, sees it too.
  const served = (request_id: string) => {
    const record = logRecord({ request_id, access_key_id: key.id });
    quotaMeterFor(logs).record(record);
    logs.append(record);
  };
  served('q1');
  t.match(await reason({}), { routable: true, access_key: { quota: { exceeded: false, lines: [{ scope: 'total', metric: 'requests', limit: 2, used: 1 }] } } });
  served('q2');
  t.match(await reason({}), { routable: false, reason_code: 'quota_exceeded' });
  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { quota: null } });

  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { expires_at: new Date(gw.clock.now).toISOString() } });
  t.match(await reason({}), { reason_code: 'access_key_expired', access_key: { expired: true } });
  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { enabled: false } });
  t.match(await reason({}), { reason_code: 'access_key_disabled' });
});

t.test('inspection: AUTH_KEY only, validated input, unknown key 404', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  t.equal((await gw.api('POST', '/api/route/inspect', { token: key.value, body: { protocol: 'x-completions', external_model: 'm', access_key_id: key.id } })).status, 403);
  t.match((await inspect(gw, { access_key_id: 99 })).json, { code: 'NOT_FOUND', data: { resource: 'access_key', id: 99 } });
  t.match((await inspect(gw, { access_key_id: key.id, protocol: 'gopher' })).json.data, { field: 'protocol', reason: 'invalid_value' });
  t.match((await inspect(gw, { access_key_id: '1' })).json.data, { field: 'access_key_id', reason: 'wrong_type' });
});

t.test('switchyard inspect gives the same answer offline and against a running server', async (t) => {
  const gw = await startGateway(t);
  await group(gw, {});
  const key = await seedAccessKey(gw);
  const api = (await inspect(gw, { access_key_id: key.id })).json.data;
  const offline = await cli(['--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(key.id), '--json', '--data', gw.dataDir]);
  t.same(JSON.parse(offline.stdout), api, 'offline against the data directory');
  const remote = await cli(['--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(key.id), '--json', '--url', gw.url], { AUTH_KEY });
  t.same(JSON.parse(remote.stdout), api, 'against the running server');
  const human = await cli(['--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(key.id), '--data', gw.dataDir]);
  t.match(human.stdout, /^routable: yes\n/);
  t.match(human.stdout, /group #1 "g" ch02 .*included, tier 0, share 100%/);
  const refused = await cli(['--protocol', 'x-completions', '--model', 'nope', '--access-key', String(key.id), '--data', gw.dataDir]).catch((e: { code: number; stdout: string }) => e);
  t.equal((refused as { code: number }).code, 1, 'exit code 1 when not routable');
  t.match((refused as { stdout: string }).stdout, /routable: no \(model_not_visible/);
});

t.test('switchyard inspect without --json still says until when a credential cools down, why one is disabled, and the route notes', async (t) => {
  const gw = await startGateway(t);
  const id = await group(gw, {}, 'sk-inspect-000000011\nsk-inspect-000000012');
  const [cooling, disabled] = await gw.server.store.credentials.list(id);
  // The CLI runs on the real clock, not the gateway's test clock.
  const until = new Date(Date.now() + 3_600_000).toISOString();
  await gw.server.store.credentials.setState(id, cooling!.id, { to: 'cooldown', until });
  await gw.server.store.credentials.setState(id, disabled!.id, { to: 'disabled', reason: 'upstream answered 401' });
  // ch29 answers responses natively but stateless (note 11), which the JSON shows as restrictions and notes.
  await gw.create('/api/groups', { name: 'stateless', channel: 'ch29', models: [{ external: 'resp-model', upstream: 'vendor-resp' }] });
  const key = await seedAccessKey(gw, { protocols: ['x-completions', 'x-responses'] });
  const text = async (args: string[]) => (await cli(args).catch((e: { stdout: string }) => e)).stdout;
  const human = await text(['--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(key.id), '--data', gw.dataDir]);
  t.match(human, new RegExp(`credential #${cooling!.id} api_key cooldown: \\w+ until ${until.replace(/\./g, '\\.')}`), 'the cooldown end');
  t.match(human, new RegExp(`credential #${disabled!.id} api_key disabled: \\w+ \\(upstream answered 401\\)`), 'the reason it was disabled');
  const responses = (await inspect(gw, { access_key_id: key.id, protocol: 'x-responses', external_model: 'resp-model' })).json.data;
  t.match(responses.candidates[0].route, { restrictions: ['stateless'], notes: [11] }, 'ch29: stateless creation, note 11');
  const summary = await text(['--protocol', 'x-responses', '--model', 'resp-model', '--access-key', String(key.id), '--data', gw.dataDir]);
  t.match(summary, /route N -> native \(stateless; note 11\)$/m, 'the restriction and the note, in the summary too');
});
