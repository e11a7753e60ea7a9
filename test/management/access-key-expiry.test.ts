import t from 'tap';
import { openLowdbConfigStore } from '../../src/store/index.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

// Date-times the schema's date-time format accepts but that name no instant `Date.parse` can
// read: an offset without minutes, and a leap second.
const UNREADABLE = ['2020-01-01T00:00:00-05', '2030-01-01T00:00:00+01', '2016-12-31T23:59:60Z'];

t.test('an expires_at that names no instant is refused on create and PATCH, and nothing is stored', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw, { expires_at: '2031-05-06T07:08:09Z' });
  for (const expires_at of UNREADABLE) {
    const created = await gw.create('/api/access-keys', { name: 'k', protocols: [], expires_at });
    t.equal(created.status, 400, `create ${expires_at}`);
    t.same(created.json, { code: 'VALIDATION_FAILED', message: created.json.message, data: { field: 'expires_at', reason: 'invalid_value' } });
    const patched = await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { expires_at, name: 'renamed' } });
    t.equal(patched.status, 400, `PATCH ${expires_at}`);
    t.match(patched.json, { code: 'VALIDATION_FAILED', data: { field: 'expires_at', reason: 'invalid_value' } });
  }
  const list = (await gw.api('GET', '/api/access-keys')).json.data;
  t.equal(list.length, 1, 'no key was created');
  t.match(list[0], { name: 'client', expires_at: '2031-05-06T07:08:09.000Z' }, 'the refused PATCH changed nothing');
});

t.test('expires_at is stored normalized to UTC milliseconds', async (t) => {
  const gw = await startGateway(t);
  const created = await gw.create('/api/access-keys', { name: 'k', protocols: [], expires_at: '2030-01-01T00:00:00+01:00' });
  t.equal(created.status, 201);
  t.equal(created.json.data.expires_at, '2029-12-31T23:00:00.000Z');
  const patched = await gw.api('PATCH', `/api/access-keys/${created.json.data.id}`, { body: { expires_at: '2030-06-01t12:00:00.5-0230' } });
  t.equal(patched.json.data.expires_at, '2030-06-01T14:30:00.500Z');
  t.equal((await gw.api('GET', `/api/access-keys/${created.json.data.id}`)).json.data.expires_at, '2030-06-01T14:30:00.500Z');
  const cleared = await gw.api('PATCH', `/api/access-keys/${created.json.data.id}`, { body: { expires_at: null } });
  t.equal(cleared.json.data.expires_at, null);
});

t.test('a stored expires_at that names no instant (a row stored before the rule) counts as expired', async (t) => {
  const gw = await startGateway(t);
  const group = await seedGroup(gw);
  await gw.create(`/api/groups/${group}/credentials/import`, { credentials: 'sk-expiry-000000001' });
  const key = await seedAccessKey(gw);
  const inspect = async () => (await gw.api('POST', '/api/route/inspect', { body: { protocol: 'x-completions', external_model: 'chat-model', access_key_id: key.id } })).json.data;
  t.match(await inspect(), { routable: true, access_key: { expired: false } });

  await gw.stop();
  const store = await openLowdbConfigStore(gw.dataDir);
  await store.accessKeys.update(key.id, { expires_at: '2099-01-01T00:00:00+01' });
  await store.close();
  await gw.restart();

  t.match(await inspect(), { routable: false, reason_code: 'access_key_expired', access_key: { expired: true } });
  t.equal((await gw.api('GET', '/api/auth/session', { token: key.value })).status, 401, 'nor does it authenticate to the management API');
});
