import t from 'tap';
import { startGateway, type Gateway } from './support/gateway.ts';

async function ch31Group(gw: Gateway, name: string, baseUrl: string): Promise<number> {
  const res = await gw.create('/api/groups', { name, channel: 'ch31', base_url: baseUrl, models: [{ external: 'm' }] });
  if (res.status !== 201) throw new Error(`ch31Group: ${res.status} ${res.text}`);
  return res.json.data.id as number;
}

async function revealAll(gw: Gateway, groupId: number): Promise<Array<Record<string, string>>> {
  const list = (await gw.api('GET', `/api/groups/${groupId}/credentials`)).json.data as Array<{ id: number }>;
  return Promise.all(list.map(async (c) => (await gw.api('POST', `/api/groups/${groupId}/credentials/${c.id}/reveal`)).json.data.fields));
}

t.test('credentials: a multi-field text download imports back into another Group with the same fields', async (t) => {
  const gw = await startGateway(t);
  const source = await ch31Group(gw, 'source', 'https://source-group.test');
  const originals = [
    { access_key: 'ak-secret-valid-0000001', base_url: 'https://up.example' },
    { access_key: 'ak-secret-valid-0000002', base_url: 'https://other.example/v1' },
  ];
  for (const fields of originals) t.equal((await gw.create(`/api/groups/${source}/credentials/connect`, { kind: 'access_key_base_url', fields })).status, 201);

  const download = await gw.api('GET', `/api/groups/${source}/credentials/download?format=text`);
  t.same(download.text.trimEnd().split('\n').map((l) => JSON.parse(l)), originals, 'one JSON line per credential');

  const target = await ch31Group(gw, 'target', 'https://target-group.test');
  const imported = await gw.create(`/api/groups/${target}/credentials/import`, { credentials: download.text });
  t.equal(imported.status, 200);
  t.match(imported.json.data, { kind: 'access_key_base_url', total: 2, duplicates: [] });
  t.same(imported.json.data.created.map((c: { line: number; masked: string }) => [c.line, c.masked]), [[1, 'ak-s...0001'], [2, 'ak-s...0002']], 'masked like the secret, not the JSON line');

  const listed = (await gw.api('GET', `/api/groups/${target}/credentials`)).json.data;
  t.same(listed.map((c: { kind: string; fields: object }) => [c.kind, c.fields]), originals.map((o) => ['access_key_base_url', { base_url: o.base_url }]), "the exported base_url is kept, not the Group's");
  t.same(await revealAll(gw, target), originals, 'the same secret, not the whole line');
  t.same((await gw.create(`/api/groups/${target}/credentials/import`, { credentials: download.text })).json.data.duplicates.map((d: { line: number }) => d.line), [1, 2], 'a second import finds the same credentials');
});

t.test('credentials: a malformed JSON line of a multi-field kind refuses the whole import', async (t) => {
  const gw = await startGateway(t);
  const group = await ch31Group(gw, 'g', 'https://group.test');
  const good = JSON.stringify({ access_key: 'ak-secret-valid-0000001', base_url: 'https://up.example' });
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['not JSON', '{not json ak-secret-valid-0000002}', { field: 'credentials', reason: 'not_a_json_object' }],
    ['unknown field', '{"access_key":"ak-secret-valid-0000002","bogus":1}', { field: 'credentials.bogus', reason: 'unknown_field' }],
    ['missing secret field', '{"base_url":"https://up.example"}', { field: 'credentials.access_key', reason: 'required' }],
    ['non-http base_url', '{"access_key":"ak-secret-valid-0000002","base_url":"ftp://up.example"}', { field: 'credentials.base_url', reason: 'invalid_value' }],
    ['non-string secret', '{"access_key":12345,"base_url":"https://up.example"}', { field: 'credentials.access_key', reason: 'wrong_type' }],
    // The schemas' limit for a value (connect's, the stored record's): one past it would stop the next start.
    ['a value past 65536 characters', JSON.stringify({ access_key: 'k'.repeat(65537), base_url: 'https://up.example' }), { field: 'credentials.access_key', reason: 'invalid_value', rule: 'maxLength' }],
  ];
  for (const [what, bad, expected] of cases) {
    const res = await gw.create(`/api/groups/${group}/credentials/import`, { credentials: `# exported\n${good}\n\n${bad}\n` });
    t.equal(res.status, 400, what);
    t.equal(res.json.code, 'VALIDATION_FAILED', what);
    t.match(res.json.data, { ...expected, line: 2 }, `${what}: names the second credential line`);
    t.notMatch(res.text, /ak-secret-valid/, `${what}: no secret in the answer`);
    t.same((await gw.api('GET', `/api/groups/${group}/credentials`)).json.data, [], `${what}: nothing stored, not even the good line`);
    t.same(await gw.server.store.credentials.list(group), [], `${what}: the store is untouched`);
  }
});
