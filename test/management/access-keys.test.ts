import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { seedGroup, startGateway } from './support/gateway.ts';

t.test('access keys: create shows the value once; list and details are masked', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const created = await gw.create('/api/access-keys', {
    name: 'ci',
    protocols: ['x-completions', 'x-messages'],
    groups: [groupId],
    models: ['chat-model'],
    record_request_body: true,
    quota: { total: { requests: 1000, cost: 25.5 }, per_period: { period: 'day', tokens: 100000 } },
    expires_at: '2027-01-01T00:00:00Z',
  });
  t.equal(created.status, 201);
  const key = created.json.data;
  t.match(key, { id: 1, name: 'ci', protocols: ['x-completions', 'x-messages'], groups: [groupId], record_request_body: true, enabled: true, quota: { per_period: { period: 'day' } } });
  t.match(key.value, /^sy-[A-Za-z0-9_-]{43}$/);
  t.equal(key.masked, `${key.value.slice(0, 4)}...${key.value.slice(-4)}`);
  const list = await gw.api('GET', '/api/access-keys');
  t.notMatch(list.text, key.value, 'the list never has the value');
  t.notOk('value' in (await gw.api('GET', '/api/access-keys/1')).json.data);
  t.notMatch(readFileSync(path.join(gw.dataDir, 'config.json'), 'utf8'), key.value, 'encrypted at rest');

  const defaults = (await gw.create('/api/access-keys', { name: 'plain', protocols: [] })).json.data;
  t.match(defaults, { record_request_body: false, groups: null, models: null, quota: null, expires_at: null, enabled: true }, 'record_request_body defaults to false');
});

t.test('access keys: validation of protocols, groups and quota', async (t) => {
  const gw = await startGateway(t);
  const unknownProtocol = await gw.create('/api/access-keys', { name: 'k', protocols: ['x-completions', 'smtp'] });
  t.match(unknownProtocol.json.data, { field: 'protocols[1]', reason: 'invalid_value' }, 'protocol ids come from protocols.yaml');
  const unknownGroup = await gw.create('/api/access-keys', { name: 'k', protocols: [], groups: [77] });
  t.same(unknownGroup.json.data, { field: 'groups[0]', reason: 'unknown_group' });
  const badQuota = await gw.create('/api/access-keys', { name: 'k', protocols: [], quota: { per_period: { tokens: 5 } } });
  t.match(badQuota.json.data, { field: 'quota.per_period.period', reason: 'required' });
  const badDate = await gw.create('/api/access-keys', { name: 'k', protocols: [], expires_at: 'tomorrow' });
  t.match(badDate.json.data, { field: 'expires_at', reason: 'invalid_value' });
  t.same((await gw.api('GET', '/api/access-keys')).json.data, []);
});

t.test('access keys: update, rotate, reveal (audited), delete; the value authenticates', async (t) => {
  const gw = await startGateway(t);
  const { id, value } = (await gw.create('/api/access-keys', { name: 'k', protocols: ['x-completions'] })).json.data;
  t.equal((await gw.api('GET', '/api/auth/session', { token: value })).json.data.principal, 'access_key');

  const updated = await gw.api('PATCH', `/api/access-keys/${id}`, { body: { name: 'renamed', protocols: ['rerank'], record_request_body: true } });
  t.match(updated.json.data, { name: 'renamed', protocols: ['rerank'], record_request_body: true });

  const rotated = await gw.create(`/api/access-keys/${id}/rotate`);
  t.equal(rotated.status, 200);
  t.not(rotated.json.data.value, value);
  t.equal((await gw.api('GET', '/api/auth/session', { token: value })).status, 401, 'the old value stops working');
  t.equal((await gw.api('GET', '/api/auth/session', { token: rotated.json.data.value })).status, 200);

  const revealed = await gw.api('POST', `/api/access-keys/${id}/reveal`);
  t.same(revealed.json.data, { id, value: rotated.json.data.value });
  const audit = (await gw.api('GET', '/api/audit')).json.data;
  t.match(audit, [{ action: 'access_key.reveal', target: { access_key_id: id }, at: new Date(gw.clock.now).toISOString(), peer: '127.0.0.1' }]);

  const expired = await gw.api('PATCH', `/api/access-keys/${id}`, { body: { expires_at: new Date(gw.clock.now - 1000).toISOString() } });
  t.equal(expired.status, 200);
  t.equal((await gw.api('GET', '/api/auth/session', { token: rotated.json.data.value })).status, 401, 'an expired key does not authenticate');

  t.equal((await gw.api('DELETE', `/api/access-keys/${id}`)).status, 200);
  t.equal((await gw.api('GET', `/api/access-keys/${id}`)).status, 404);
  t.equal((await gw.api('POST', `/api/access-keys/${id}/reveal`)).status, 404);
});

t.test('an AccessKey cannot reveal, even its own value', async (t) => {
  const gw = await startGateway(t);
  const { id, value } = (await gw.create('/api/access-keys', { name: 'k', protocols: [] })).json.data;
  t.equal((await gw.api('POST', `/api/access-keys/${id}/reveal`, { token: value })).status, 403);
  t.same((await gw.api('GET', '/api/audit')).json.data, [], 'a refused reveal is not a reveal');
});

t.test('deleting a Group removes it from AccessKey visibility lists', async (t) => {
  const gw = await startGateway(t);
  const a = await seedGroup(gw);
  const b = await seedGroup(gw);
  const { id } = (await gw.create('/api/access-keys', { name: 'k', protocols: [], groups: [a, b] })).json.data;
  await gw.api('DELETE', `/api/groups/${a}`);
  t.same((await gw.api('GET', `/api/access-keys/${id}`)).json.data.groups, [b]);
});
