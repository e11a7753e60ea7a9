import t from 'tap';
import { seedGroup, startGateway } from './support/gateway.ts';

t.test('credentials: a PATCH that would equal another credential of the Group is 409 and changes nothing', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-secret-AAAA0001\nsk-secret-BBBB0002' });
  const [first, second] = imported.json.data.created.map((c: { id: number }) => c.id) as [number, number];
  const base = `/api/groups/${groupId}/credentials/${second}`;
  const before = (await gw.api('GET', base)).json.data;

  const res = await gw.api('PATCH', base, { body: { name: 'renamed', fields: { api_key: 'sk-secret-AAAA0001' } } });
  t.equal(res.status, 409);
  t.equal(res.json.code, 'CONFLICT');
  t.same(res.json.data, { reason: 'duplicate_credential', duplicate_of: first });

  t.same((await gw.api('GET', base)).json.data, before, 'name, masked value and timestamps unchanged');
  t.same((await gw.api('POST', `${base}/reveal`)).json.data.fields, { api_key: 'sk-secret-BBBB0002' }, 'the secret is unchanged');
  const again = await gw.create(`/api/groups/${groupId}/credentials/connect`, { kind: 'api_key', fields: { api_key: 'sk-secret-BBBB0002' } });
  t.match(again.json.data, { reason: 'duplicate_credential', duplicate_of: second }, 'the duplicate index still names the credential by its unchanged key');

  const same = await gw.api('PATCH', base, { body: { fields: { api_key: 'sk-secret-BBBB0002' } } });
  t.equal(same.status, 200, 'saving a credential with its own value is not a duplicate');
});

t.test('credentials: the same value in another Group is not a duplicate for PATCH', async (t) => {
  const gw = await startGateway(t);
  const groupA = await seedGroup(gw);
  const groupB = await seedGroup(gw);
  t.equal((await gw.create(`/api/groups/${groupA}/credentials/import`, { credentials: 'sk-secret-AAAA0001' })).json.data.created.length, 1);
  const id = (await gw.create(`/api/groups/${groupB}/credentials/import`, { credentials: 'sk-secret-CCCC0003' })).json.data.created[0].id;
  const res = await gw.api('PATCH', `/api/groups/${groupB}/credentials/${id}`, { body: { fields: { api_key: 'sk-secret-AAAA0001' } } });
  t.equal(res.status, 200);
  t.same((await gw.api('POST', `/api/groups/${groupB}/credentials/${id}/reveal`)).json.data.fields, { api_key: 'sk-secret-AAAA0001' });
});
