import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { seedGroup, startGateway } from './support/gateway.ts';

t.test('groups: create, list, details, settings, models, delete', async (t) => {
  const gw = await startGateway(t);
  const created = await gw.create('/api/groups', { name: 'main', channel: 'ch02', base_url: 'https://up.test', priority: 5, weight: 3, models: [{ external: 'fast', upstream: 'vendor-fast-v2' }, { external: 'slow' }] });
  t.equal(created.status, 201);
  const g = created.json.data;
  t.match(g, { name: 'main', channel: 'ch02', priority: 5, weight: 3, enabled: true, models: [{ external: 'fast', upstream: 'vendor-fast-v2' }, { external: 'slow', upstream: 'slow' }] });
  t.same((await gw.api('GET', '/api/groups')).json.data.map((x: { id: number }) => x.id), [g.id]);
  t.equal((await gw.api('GET', `/api/groups/${g.id}`)).json.data.credentials.total, 0);

  const settings = await gw.api('PUT', `/api/groups/${g.id}/settings`, { body: { priority: 9, enabled: false } });
  t.match(settings.json.data, { name: 'main', priority: 9, weight: 3, enabled: false }, 'submitted items saved, others kept');
  t.same((await gw.api('GET', `/api/groups/${g.id}/settings`)).json.data, settings.json.data);

  const models = await gw.api('PUT', `/api/groups/${g.id}/models`, { body: { models: [{ external: 'only', upstream: 'up-only' }] } });
  t.same(models.json.data, [{ external: 'only', upstream: 'up-only' }]);
  const dup = await gw.api('PUT', `/api/groups/${g.id}/models`, { body: { models: [{ external: 'a' }, { external: 'a' }] } });
  t.same(dup.json.data, { field: 'models[1].external', reason: 'duplicate' });
  for (const model of [{ external: 'a', upstream: 'up\r\nx-injected: 1' }, { external: 'a\nb' }, { external: 'a', upstream: 'tab\there' }]) {
    const bad = await gw.api('PUT', `/api/groups/${g.id}/models`, { body: { models: [model] } });
    t.equal(bad.status, 400, 'a model name with a control character is refused: it could not be sent in a path or a form field');
    t.match(bad.json.data, { field: /^models\[0\]\.(external|upstream)$/ });
  }
  const badCreate = await gw.create('/api/groups', { name: 'crlf', channel: 'ch02', base_url: 'https://up.test', models: [{ external: 'x', upstream: 'y\r\n' }] });
  t.equal(badCreate.status, 400);
  // A lone surrogate has no UTF-8 spelling: a path, a query or a form could not carry it; a whole pair (an emoji) is a name like any other.
  for (const model of [{ external: 'a', upstream: 'up\ud800' }, { external: '\udc00b' }]) {
    const bad = await gw.api('PUT', `/api/groups/${g.id}/models`, { body: { models: [model] } });
    t.equal(bad.status, 400, 'a model name with a lone surrogate is refused');
    t.match(bad.json.data, { field: /^models\[0\]\.(external|upstream)$/, reason: 'invalid_value', rule: 'pattern' });
  }
  t.equal((await gw.create('/api/groups', { name: 'lone', channel: 'ch02', base_url: 'https://up.test', models: [{ external: 'x', upstream: 'y\udfff' }] })).status, 400);
  const paired = await gw.create('/api/groups', { name: 'pair', channel: 'ch02', base_url: 'https://up.test', models: [{ external: 'ü/😀:x', upstream: 'org/😀:y' }] });
  t.equal(paired.status, 201, 'a name with non-ASCII letters and a surrogate pair is stored');
  t.same((await gw.api('GET', `/api/groups/${g.id}/models`)).json.data, [{ external: 'only', upstream: 'up-only' }], 'the refused lists changed nothing');

  t.equal((await gw.api('DELETE', `/api/groups/${g.id}`)).status, 200);
  t.equal((await gw.api('GET', `/api/groups/${g.id}`)).status, 404);
  t.equal((await gw.api('DELETE', `/api/groups/${g.id}`)).status, 404);
  t.equal((await gw.api('GET', '/api/groups/abc')).status, 404, 'a non-numeric id names nothing');
});

t.test('groups: base URL required where the channel\'s credential kinds need it (ch31-ch35)', async (t) => {
  const gw = await startGateway(t);
  for (const channel of ['ch31', 'ch32', 'ch33', 'ch34', 'ch35']) {
    const res = await gw.create('/api/groups', { name: channel, channel });
    t.equal(res.status, 400, channel);
    t.match(res.json.data, { field: 'base_url', reason: 'required' });
  }
  t.equal((await gw.create('/api/groups', { name: 'c', channel: 'ch32', base_url: 'https://relay.test/v1' })).status, 201);
  t.equal((await gw.create('/api/groups', { name: 'ftp', channel: 'ch32', base_url: 'ftp://relay.test' })).json.data.field, 'base_url');
  const proxy = await gw.create('/api/groups', { name: 'p', channel: 'ch16', proxy_url: 'http://proxy.test:3128' });
  t.match(proxy.json.data, { field: 'proxy_url', reason: 'channel_has_no_managed_proxy', note: 14 }, 'note 14: no managed proxy on ch16-ch18');
  const id = (await gw.create('/api/groups', { name: 'c2', channel: 'ch33', base_url: 'https://relay.test' })).json.data.id;
  const cleared = await gw.api('PUT', `/api/groups/${id}/settings`, { body: { base_url: null } });
  t.equal(cleared.json.data.field, 'base_url', 'cannot be removed later either');
});

t.test('credentials: batch import reports duplicates and stores each once, lists masked', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const first = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: '# team keys\nsk-alpha-0000000001\n\n  sk-beta-00000000002  \nsk-alpha-0000000001\r\n' });
  t.equal(first.status, 200);
  t.match(first.json.data, { kind: 'api_key', total: 3 });
  t.same(first.json.data.created.map((c: { line: number }) => c.line), [1, 2]);
  t.same(first.json.data.duplicates, [{ line: 3, masked: 'sk-a...0001', duplicate_of: first.json.data.created[0].id }]);
  const second = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-beta-00000000002\nsk-gamma-0000000003' });
  t.equal(second.json.data.created.length, 1);
  t.equal(second.json.data.duplicates[0].duplicate_of, first.json.data.created[1].id, 'an existing key of the Group is a duplicate too');

  const list = await gw.api('GET', `/api/groups/${groupId}/credentials`);
  t.equal(list.json.data.length, 3);
  t.notMatch(list.text, /sk-alpha-0000000001|sk-beta-00000000002|sk-gamma/, 'no secret in the list');
  t.same(list.json.data[0].masked, { api_key: 'sk-a...0001' });
  t.equal(list.json.data[0].state, 'active');

  const raw = readFileSync(path.join(gw.dataDir, 'config.json'), 'utf8');
  t.notMatch(raw, /sk-alpha|sk-beta|sk-gamma/, 'secrets are encrypted at rest');
  t.match(raw, /"sealed": "v1:/);

  const empty = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: '# nothing\n\n' });
  t.same(empty.json.data, { field: 'credentials', reason: 'empty' });
  const wrongKind = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'x', kind: 'oauth' });
  t.match(wrongKind.json.data, { field: 'kind', reason: 'kind_not_of_channel', allowed: ['api_key'] }, 'kinds are checked against the channel in the manifest');
});

t.test('credentials: import fills location fields from the Group; structured kinds need connect', async (t) => {
  const gw = await startGateway(t);
  const relay = (await gw.create('/api/groups', { name: 'relay', channel: 'ch32', base_url: 'https://relay.test/v1', models: [{ external: 'm' }] })).json.data.id;
  const imported = await gw.create(`/api/groups/${relay}/credentials/import`, { credentials: 'relay-key-000000001' });
  t.equal(imported.json.data.kind, 'api_key_base_url');
  const cred = (await gw.api('GET', `/api/groups/${relay}/credentials`)).json.data[0];
  t.same(cred.fields, { base_url: 'https://relay.test/v1' }, 'the non-secret base_url is stored in the clear');
  t.same(Object.keys(cred.masked), ['api_key']);

  const sa = (await gw.create('/api/groups', { name: 'sa', channel: 'ch18' })).json.data.id;
  const notImportable = await gw.create(`/api/groups/${sa}/credentials/import`, { credentials: '{}' });
  t.match(notImportable.json.data, { field: 'kind', reason: 'not_importable' });
  const connected = await gw.create(`/api/groups/${sa}/credentials/connect`, { kind: 'service_account_json', fields: { service_account_json: '{"type":"service_account","private_key":"-----BEGIN"}', location: 'region-1' }, name: 'prod sa' });
  t.equal(connected.status, 201);
  t.match(connected.json.data, { kind: 'service_account_json', name: 'prod sa', fields: { location: 'region-1' } });
  const missing = await gw.create(`/api/groups/${sa}/credentials/connect`, { kind: 'service_account_json', fields: { location: 'x' } });
  t.same(missing.json.data, { field: 'fields.service_account_json', reason: 'required' });
  const unknown = await gw.create(`/api/groups/${sa}/credentials/connect`, { kind: 'service_account_json', fields: { service_account_json: '{}', location: 'x', colour: 'red' } });
  t.match(unknown.json.data, { field: 'fields.colour', reason: 'unknown_field' });
  const again = await gw.create(`/api/groups/${sa}/credentials/connect`, { kind: 'service_account_json', fields: { service_account_json: '{"type":"service_account","private_key":"-----BEGIN"}', location: 'region-1' } });
  t.equal(again.status, 409);
  t.match(again.json.data, { reason: 'duplicate_credential', duplicate_of: connected.json.data.id });
});

t.test('credentials: details, update, disable, enable, reset credits, delete', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const id = (await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-one-000000000001' })).json.data.created[0].id;
  const base = `/api/groups/${groupId}/credentials/${id}`;
  t.equal((await gw.api('GET', base)).json.data.id, id);
  const renamed = await gw.api('PATCH', base, { body: { name: 'primary key', fields: { api_key: 'sk-new-000000000009' } } });
  t.match(renamed.json.data, { name: 'primary key', masked: { api_key: 'sk-n...0009' }, weight: 1 });
  const weighted = await gw.api('PATCH', base, { body: { weight: 4 } });
  t.match(weighted.json.data, { weight: 4, name: 'primary key' }, 'a credential weight is saved');
  t.equal((await gw.api('PATCH', base, { body: { weight: 0 } })).json.code, 'VALIDATION_FAILED', 'weights start at 1');
  const disabled = await gw.api('POST', `${base}/disable`, { body: { reason: 'billing' } });
  t.match(disabled.json.data, { state: 'disabled', enabled: false, disabled_reason: 'billing' });
  const enabled = await gw.api('POST', `${base}/enable`);
  t.match(enabled.json.data, { state: 'active', enabled: true, disabled_reason: null });
  await gw.server.store.credentials.setState(groupId, id, { to: 'cooldown', until: new Date(gw.clock.now + 60_000).toISOString() });
  t.equal((await gw.api('GET', base)).json.data.state, 'cooldown', 'a cooldown set by the data plane shows');
  const reset = await gw.create(`${base}/reset-credits/consume`);
  t.match(reset.json.data, { state: 'active', reset_credits_consumed: 1, cooldown_until: null });
  t.equal((await gw.api('DELETE', base)).status, 200);
  t.equal((await gw.api('GET', base)).status, 404);
  t.equal((await gw.api('GET', `/api/groups/999/credentials`)).status, 404);
});

t.test('reveal and download return secrets to the AUTH_KEY and are recorded', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const created = (await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-one-000000000001\nsk-two-000000000002' })).json.data.created;
  const reveal = await gw.api('POST', `/api/groups/${groupId}/credentials/${created[0].id}/reveal`);
  t.same(reveal.json.data, { id: created[0].id, fields: { api_key: 'sk-one-000000000001' } });
  const text = await gw.api('GET', `/api/groups/${groupId}/credentials/download`);
  t.equal(text.status, 200);
  t.match(text.headers['content-disposition'], /attachment; filename="group-\d+-credentials.txt"/);
  t.equal(text.text, 'sk-one-000000000001\nsk-two-000000000002\n', 'one key per line, the import format');
  const json = await gw.api('GET', `/api/groups/${groupId}/credentials/download?format=json`);
  t.same(JSON.parse(json.text).map((c: { fields: object }) => c.fields), [{ api_key: 'sk-one-000000000001' }, { api_key: 'sk-two-000000000002' }]);

  const audit = await gw.api('GET', '/api/audit');
  t.equal(audit.json.data.length, 3);
  const [last, middle, first] = audit.json.data;
  t.match(first, { action: 'credential.reveal', target: { group_id: groupId, credential_ids: [created[0].id] }, peer: '127.0.0.1', at: new Date(gw.clock.now).toISOString() });
  t.match(middle, { action: 'credential.download', target: { group_id: groupId, credential_ids: [created[0].id, created[1].id] } });
  t.equal(last.action, 'credential.download');
  t.notMatch(audit.text, /sk-one|sk-two/, 'the record says what, never the value');
  await gw.restart();
  t.equal((await gw.api('GET', '/api/audit')).json.data.length, 3, 'the record is durable');
});
