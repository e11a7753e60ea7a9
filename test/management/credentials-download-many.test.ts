import t from 'tap';
import { seedGroup, startGateway } from './support/gateway.ts';

t.test('credentials: a download of many credentials holds every secret once, revealed in one read of the store', async (t) => {
  const gw = await startGateway(t);
  const group = await seedGroup(gw);
  const other = await seedGroup(gw, ['other-model'], { name: 'other' });
  const secrets = Array.from({ length: 300 }, (_, i) => `sk-download-many-${String(i).padStart(5, '0')}-abcdef`);
  t.equal((await gw.create(`/api/groups/${group}/credentials/import`, { credentials: secrets.join('\n') })).status, 200);
  t.equal((await gw.create(`/api/groups/${other}/credentials/import`, { credentials: 'sk-download-other-group-0000001' })).status, 200);

  const store = gw.server.store.credentials;
  const calls = { reveal: 0, revealAll: 0 };
  const { reveal, revealAll } = { reveal: store.reveal.bind(store), revealAll: store.revealAll.bind(store) };
  store.reveal = (g, id) => (calls.reveal++, reveal(g, id));
  store.revealAll = (g) => (calls.revealAll++, revealAll(g));

  const text = await gw.api('GET', `/api/groups/${group}/credentials/download?format=text`);
  t.equal(text.status, 200);
  t.same(text.text.trimEnd().split('\n'), secrets, 'every secret once, in order, none of another Group');
  const json = await gw.api('GET', `/api/groups/${group}/credentials/download?format=json`);
  t.same(JSON.parse(json.text).map((c: { fields: { api_key: string } }) => c.fields.api_key), secrets);
  t.same(calls, { reveal: 0, revealAll: 2 }, 'one read per download, not one per credential');
});
