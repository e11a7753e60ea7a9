import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { openLogStore } from '../dataplane/helpers/key-usage-stores.ts';
import { logRecord } from '../management/support/log-records.ts';

// config.json numbers new records from its next_id, while logs.sqlite keeps the ids of the
// records it logged. A config.json restored from an older backup, or moved away to start empty
// (the ways out a broken config.json or lost secret.key names), must not give a new AccessKey
// the id of one the logs name: it would read that key's records and recorded bodies and start
// with its quota used. Ids the logs name stay taken (docs/management-api.md, Storage).

const AUTH_KEY = 'ids-after-restore-auth-key-0123456789abcdef';

/** `switchyard serve` on `dataDir`, stopped at the test's end unless stopped before. */
async function serve(t: Test, dataDir: string) {
  const gw = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  let stopped = false;
  t.teardown(async () => {
    if (stopped) return;
    gw.kill('SIGTERM');
    await gw.exit;
  });
  const url = await gw.url;
  const api = async (method: string, p: string, body?: unknown, token = AUTH_KEY) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() });
    const res = await fetch(`${url}${p}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as { data: any } };
  };
  const chatGroup = async (upstreamUrl: string) => {
    const group = (await api('POST', '/api/groups', { name: 'g', channel: 'ch02', base_url: upstreamUrl, models: [{ external: 'chat', upstream: 'vendor-chat' }] })).json.data;
    await api('POST', `/api/groups/${group.id}/credentials/import`, { credentials: 'sk-upstream-restore-0001' });
    return group as { id: number };
  };
  const accessKey = async (name: string, fields: Record<string, unknown> = {}) =>
    (await api('POST', '/api/access-keys', { name, protocols: ['x-completions'], ...fields })).json.data as { id: number; value: string };
  const chat = async (key: string, content: string) => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content }] }) });
    await res.text();
    return res.status;
  };
  const stop = async () => {
    stopped = true;
    gw.kill('SIGTERM');
    t.equal((await gw.exit).code, 0, 'stopped cleanly');
  };
  return { api, chatGroup, accessKey, chat, stop };
}

async function setup(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}');
  });
  t.teardown(() => upstream.close());
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-ids-restore-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return { upstream, dataDir, config: path.join(dataDir, 'config.json') };
}

t.test('a config.json moved away to start empty gives new AccessKeys and Groups ids the logs do not name', async (t) => {
  const { upstream, dataDir, config } = await setup(t);
  const before = await serve(t, dataDir);
  const oldGroup = await before.chatGroup(upstream.url);
  const alice = await before.accessKey('alice', { record_request_body: true });
  t.equal(await before.chat(alice.value, 'alice private prompt'), 200);
  await before.stop();

  renameSync(config, `${config}.broken`);
  const after = await serve(t, dataDir);
  const newGroup = await after.chatGroup(upstream.url);
  const bob = await after.accessKey('bob', { quota: { total: { requests: 1 } } });
  t.ok(bob.id > alice.id, `the new key's id (${bob.id}) is past the logged one's (${alice.id})`);
  t.ok(newGroup.id > oldGroup.id, `the new Group's id (${newGroup.id}) is past the logged one's (${oldGroup.id})`);
  t.same((await after.api('GET', '/api/logs', undefined, bob.value)).json.data.items, [], 'the new key sees none of the old records');
  t.equal(await after.chat(bob.value, 'hello'), 200, "the new key's quota starts unused");
  t.equal((await after.api('GET', `/api/logs?group_id=${newGroup.id}`)).json.data.items.length, 1, "the new Group's records are its own");
});

t.test('a config.json restored from a backup older than some AccessKeys does not give their ids again', async (t) => {
  const { upstream, dataDir, config } = await setup(t);
  const before = await serve(t, dataDir);
  await before.chatGroup(upstream.url);
  await before.accessKey('first');
  copyFileSync(config, `${config}.backup`);
  const later = await before.accessKey('later', { record_request_body: true });
  t.equal(await before.chat(later.value, 'a prompt the backup never saw'), 200);
  await before.stop();

  copyFileSync(`${config}.backup`, config);
  const after = await serve(t, dataDir);
  const next = await after.accessKey('next');
  t.ok(next.id > later.id, `the new key's id (${next.id}) is past the logged one's (${later.id})`);
  t.same((await after.api('GET', '/api/logs', undefined, next.value)).json.data.items, [], 'the new key sees none of the old records');
});

for (const kind of ['sqlite', 'worker'] as const) {
  t.test(`${kind}: the ids a store names outlive retention, and include its stored objects`, async (t) => {
    const logs = await openLogStore(t, kind);
    t.same(await logs.namedIds!(), { group: 0, credential: 0, access_key: 0 }, 'an empty store names none');
    const old = Date.parse('2026-01-01T00:00:00Z');
    logs.append(logRecord({ request_id: 'old', created_at: old, access_key_id: 9, group_id: '12' }));
    // Written with the next batch of records.
    logs.storedObjects!.recordStoredObject({ type: 'remembered', object: { key: 'response:resp_1', groupId: 5, credentialId: 21, createdBy: 2, unbilled: false, upstreamModel: null, externalModel: null } });
    logs.append(logRecord({ request_id: 'new', created_at: old + 3_600_000, access_key_id: 4, group_id: '3' }));
    await logs.flush();
    t.same(await logs.namedIds!(), { group: 12, credential: 21, access_key: 9 });
    t.equal(await logs.prune(old + 1), 1, 'retention deletes the older record');
    t.same(await logs.namedIds!(), { group: 5, credential: 21, access_key: 9 }, "the deleted record's key stays named by its kept usage");
  });
}
