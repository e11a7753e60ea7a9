import t from 'tap';
import { startGateway } from './support/gateway.ts';

const GROUP_URL = 'https://group-upstream.test';
const MOVED_URL = 'https://moved-upstream.test';

t.test('credentials: concurrent PATCHes, one moving the location and one omitting it, end as one of their serial orders', async (t) => {
  const gw = await startGateway(t);
  const group = await gw.create('/api/groups', { name: 'g', channel: 'ch31', base_url: GROUP_URL, models: [{ external: 'm' }] });
  t.equal(group.status, 201);
  const groupId = group.json.data.id as number;

  // Several rounds, each on its own credential: one round alone may happen to run in order.
  for (let round = 1; round <= 5; round++) {
    const connected = await gw.create(`/api/groups/${groupId}/credentials/connect`, { kind: 'access_key_base_url', fields: { access_key: `ak-secret-round${round}-0001` } });
    t.equal(connected.status, 201);
    t.same(connected.json.data.fields, { base_url: GROUP_URL });
    const base = `/api/groups/${groupId}/credentials/${connected.json.data.id}`;

    const [moving, rotating] = await Promise.all([
      gw.api('PATCH', base, { body: { fields: { access_key: `ak-secret-round${round}-0002`, base_url: MOVED_URL } } }),
      gw.api('PATCH', base, { body: { fields: { access_key: `ak-secret-round${round}-0003` } } }),
    ]);
    t.equal(moving.status, 200);
    t.equal(rotating.status, 200);
    const stored = (await gw.api('POST', `${base}/reveal`)).json.data.fields;
    t.equal(stored.base_url, MOVED_URL, `round ${round}: the moved location stands in either order`);

    // Each answer shows what its own PATCH stored; the later one is what is stored now.
    const rotatedFirst = rotating.json.data.revision < moving.json.data.revision;
    t.same(rotating.json.data.fields, { base_url: rotatedFirst ? GROUP_URL : MOVED_URL }, `round ${round}: the rotation's answer`);
    t.same(moving.json.data.fields, { base_url: MOVED_URL }, `round ${round}: the move's answer`);
    const last = rotatedFirst ? moving : rotating;
    t.same((await gw.api('GET', base)).json.data, last.json.data, `round ${round}: the later answer is the stored credential`);
    t.equal(stored.access_key, `ak-secret-round${round}-000${rotatedFirst ? 2 : 3}`, `round ${round}: the later PATCH's key`);
  }
});

t.test('credentials: a PATCH omitting the location keeps the one stored, not the Group base_url', async (t) => {
  const gw = await startGateway(t);
  const groupId = (await gw.create('/api/groups', { name: 'g', channel: 'ch31', base_url: GROUP_URL, models: [{ external: 'm' }] })).json.data.id as number;
  const connected = await gw.create(`/api/groups/${groupId}/credentials/connect`, { kind: 'access_key_base_url', fields: { access_key: 'ak-secret-valid-0000001', base_url: MOVED_URL } });
  const base = `/api/groups/${groupId}/credentials/${connected.json.data.id}`;
  for (const fields of [{ access_key: 'ak-secret-valid-0000002' }, { access_key: 'ak-secret-valid-0000003', base_url: '' }]) {
    const res = await gw.api('PATCH', base, { body: { fields } });
    t.equal(res.status, 200);
    t.same(res.json.data.fields, { base_url: MOVED_URL });
    t.same((await gw.api('POST', `${base}/reveal`)).json.data.fields, { access_key: fields.access_key, base_url: MOVED_URL });
  }
});
