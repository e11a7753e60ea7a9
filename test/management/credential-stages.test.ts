import t from 'tap';
import type { CredentialFlowProvider } from '../../src/management/credential-flows.ts';
import { startGateway, type Gateway } from './support/gateway.ts';

async function subscriptionGroup(gw: Gateway): Promise<number> {
  return (await gw.create('/api/groups', { name: 'subscription', channel: 'ch10' })).json.data.id;
}

t.test('a stage waits for authorization and is completed by a manual import', async (t) => {
  const gw = await startGateway(t);
  const g = await subscriptionGroup(gw);
  const created = await gw.api('POST', '/api/credential-stages', { body: { group_id: g, kind: 'oauth_json' } });
  t.equal(created.status, 201);
  t.match(created.json.data, { group_id: g, kind: 'oauth_json', flow: 'oauth', state: 'awaiting_authorization', authorization: null, credential_id: null });
  const id = created.json.data.id;
  t.same((await gw.api('GET', '/api/credential-stages')).json.data.map((s: { id: number }) => s.id), [id]);
  t.equal((await gw.api('POST', `/api/credential-stages/${id}/poll`)).json.data.state, 'awaiting_authorization', 'no flow provider: polling changes nothing');
  const imported = await gw.api('POST', `/api/credential-stages/${id}/import`, { body: { fields: { oauth_json: '{"refresh_token":"rt-0000000001"}' }, name: 'me@example' } });
  t.match(imported.json.data, { state: 'imported' });
  const credentialId = imported.json.data.credential_id;
  t.match((await gw.api('GET', `/api/groups/${g}/credentials/${credentialId}`)).json.data, { kind: 'oauth_json', name: 'me@example', state: 'active' });
  const twice = await gw.api('POST', `/api/credential-stages/${id}/import`, { body: { fields: { oauth_json: '{}' } } });
  t.equal(twice.status, 409);
  t.match(twice.json.data, { reason: 'stage_not_open', state: 'imported' });
  t.equal((await gw.api('DELETE', `/api/credential-stages/${id}`)).status, 200);
  t.equal((await gw.api('GET', `/api/credential-stages/${id}`)).status, 404);
});

t.test('stages expire, can be cancelled, and exist only for interactive kinds', async (t) => {
  const gw = await startGateway(t);
  const g = await subscriptionGroup(gw);
  const a = (await gw.api('POST', '/api/credential-stages', { body: { group_id: g, kind: 'oauth' } })).json.data.id;
  const b = (await gw.api('POST', '/api/credential-stages', { body: { group_id: g, kind: 'oauth' } })).json.data.id;
  t.equal((await gw.api('POST', `/api/credential-stages/${b}/cancel`)).json.data.state, 'cancelled');
  gw.clock.advance(15 * 60_000);
  t.equal((await gw.api('GET', `/api/credential-stages/${a}`)).json.data.state, 'expired');
  t.equal((await gw.api('POST', `/api/credential-stages/${a}/import`, { body: { fields: { refresh_token: 'x' } } })).status, 409);
  const apiKeyGroup = (await gw.create('/api/groups', { name: 'k', channel: 'ch02' })).json.data.id;
  const notInteractive = await gw.api('POST', '/api/credential-stages', { body: { group_id: apiKeyGroup, kind: 'api_key' } });
  t.match(notInteractive.json.data, { field: 'kind', reason: 'not_an_authorization_flow' });
  const wrongChannel = await gw.api('POST', '/api/credential-stages', { body: { group_id: g, kind: 'device_authorization' } });
  t.match(wrongChannel.json.data, { field: 'kind', reason: 'kind_not_of_channel' });
});

t.test('with a flow provider: authorization details, polling to imported', async (t) => {
  let authorized = false;
  const flows: CredentialFlowProvider = {
    start: async ({ stage_id }) => ({ authorization: { verification_uri: 'https://auth.test/device', user_code: `CODE-${stage_id}` }, expires_in_seconds: 600 }),
    poll: async () => (authorized ? { state: 'authorized', values: { refresh_token: 'rt-from-device-0001' } } : { state: 'pending' }),
  };
  const gw = await startGateway(t, { credentialFlows: flows });
  const g = (await gw.create('/api/groups', { name: 'device', channel: 'ch13' })).json.data.id;
  const stage = (await gw.api('POST', '/api/credential-stages', { body: { group_id: g, kind: 'device_authorization' } })).json.data;
  t.match(stage, { state: 'awaiting_authorization', authorization: { user_code: `CODE-${stage.id}` }, expires_at: new Date(gw.clock.now + 600_000).toISOString() });
  t.equal((await gw.api('POST', `/api/credential-stages/${stage.id}/poll`)).json.data.state, 'awaiting_authorization');
  authorized = true;
  const done = (await gw.api('POST', `/api/credential-stages/${stage.id}/poll`)).json.data;
  t.equal(done.state, 'imported');
  const revealed = await gw.api('POST', `/api/groups/${g}/credentials/${done.credential_id}/reveal`);
  t.same(revealed.json.data.fields, { refresh_token: 'rt-from-device-0001' });
});
