import t from 'tap';
import { seedAccessKey, seedGroup, startGateway, type Gateway } from './support/gateway.ts';

// GET /api/groups and /api/home count each Group's credentials by state, and route inspection
// lists those of each candidate. Reading them Group by Group filtered every credential once per
// Group (Groups × credentials: 500 Groups over 2,000 credentials held the event loop 25 ms a
// listing); they are read once, whatever the Groups.

/** How many credential reads (per Group or all at once) `path` makes (a POST when `body` is given). */
async function credentialReads(gw: Gateway, path: string, body?: unknown): Promise<number> {
  const credentials = gw.server.store.credentials;
  const { list, listAll } = credentials;
  let reads = 0;
  credentials.list = (groupId) => (reads++, list.call(credentials, groupId));
  credentials.listAll = () => (reads++, listAll.call(credentials));
  try {
    const res = body === undefined ? await gw.api('GET', path) : await gw.api('POST', path, { body });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
  } finally {
    credentials.list = list;
    credentials.listAll = listAll;
  }
  return reads;
}

t.test('the Group listing and home read the credentials as often with four Groups as with one', async (t) => {
  const gw = await startGateway(t);
  const first = await seedGroup(gw, ['m1']);
  await gw.create(`/api/groups/${first}/credentials/import`, { credentials: 'sk-counts-000000001\nsk-counts-000000002' });
  const withOne = { groups: await credentialReads(gw, '/api/groups'), home: await credentialReads(gw, '/api/home') };
  t.same(withOne, { groups: 1, home: 1 }, 'one read each');
  const others = [await seedGroup(gw, ['m2']), await seedGroup(gw, ['m3']), await seedGroup(gw, ['m4'])];
  await gw.create(`/api/groups/${others[1]}/credentials/import`, { credentials: 'sk-counts-000000003' });
  t.same({ groups: await credentialReads(gw, '/api/groups'), home: await credentialReads(gw, '/api/home') }, withOne);

  const listed = (await gw.api('GET', '/api/groups')).json.data as Array<{ id: number; credentials: { total: number; active: number } }>;
  t.same(
    listed.map((g) => [g.id, g.credentials.total, g.credentials.active]),
    [[first, 2, 2], [others[0], 0, 0], [others[1], 1, 1], [others[2], 0, 0]],
    'each Group still counts its own credentials',
  );
  t.match((await gw.api('GET', '/api/home')).json.data.credentials, { total: 3, active: 3 });
});

t.test('route inspection reads the credentials as often with four candidate Groups as with one', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  const inspect = { protocol: 'x-completions', external_model: 'shared', access_key_id: key.id };
  const first = await seedGroup(gw, ['shared']);
  await gw.create(`/api/groups/${first}/credentials/import`, { credentials: 'sk-inspect-000000001' });
  const withOne = await credentialReads(gw, '/api/route/inspect', inspect);
  t.equal(withOne, 1, 'one read');
  const others = [await seedGroup(gw, ['shared']), await seedGroup(gw, ['shared']), await seedGroup(gw, ['shared'])];
  await gw.create(`/api/groups/${others[2]}/credentials/import`, { credentials: 'sk-inspect-000000002\nsk-inspect-000000003' });
  t.equal(await credentialReads(gw, '/api/route/inspect', inspect), withOne);

  const inspected = (await gw.api('POST', '/api/route/inspect', { body: inspect })).json.data.candidates as Array<{ group_id: number; credentials: unknown[] }>;
  t.same(
    inspected.map((c) => [c.group_id, c.credentials.length]).sort((a, b) => a[0]! - b[0]!),
    [[first, 1], [others[0], 0], [others[1], 0], [others[2], 2]],
    'each candidate still lists its own credentials',
  );
});
