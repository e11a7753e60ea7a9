import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { CHANNELS, CREDENTIAL_KIND_IDS } from '../../src/generated/index.ts';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { AUTH_KEY, seedAccessKey, seedGroup, startGateway, tempDataDir, type Gateway } from '../management/support/gateway.ts';

// Records in a hand-edited config.json obey the rules the management API writes them by: a
// record it would refuse stops the start with one line naming the file, the record and the
// field, rather than starting and failing requests (or blaming clients) later.

type Config = Record<string, any>;

/** A data directory holding one record of each kind, written by the API and the store; the server stopped. */
async function seeded(t: Test): Promise<{ gw: Gateway; file: string; config: Config }> {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw, ['m1', 'm2']);
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-records-00000001' })).status, 200);
  await seedAccessKey(gw, { groups: [groupId] });
  t.equal((await gw.api('PUT', '/api/model-prices/m1', { body: { input_per_mtok: 1, output_per_mtok: 2 } })).status, 200);
  await gw.server.store.credentialStages.create({ group_id: groupId, kind: 'api_key', flow: 'static', authorization: null, expires_at: new Date(Date.now() + 60_000).toISOString() });
  await gw.stop();
  const file = path.join(gw.dataDir, 'config.json');
  return { gw, file, config: JSON.parse(readFileSync(file, 'utf8')) as Config };
}

const OTHER_KIND = CREDENTIAL_KIND_IDS.find((k) => !(CHANNELS.ch02.credential_kinds as readonly string[]).includes(k));

const EDITS: Array<[string, (c: Config) => void, string]> = [
  ['a Group without its models', (c) => delete c.groups[0].models, 'groups[0].models: required'],
  ['null among the Groups', (c) => c.groups.push(null), 'groups[1]: must be object'],
  ['a weight that is no number', (c) => (c.groups[0].weight = 'heavy'), 'groups[0].weight: must be integer'],
  ['an unknown channel', (c) => (c.groups[0].channel = 'ch99'), 'groups[0].channel: must be a known channel_id'],
  ['a base_url that is no URL', (c) => (c.groups[0].base_url = 'not a url'), 'groups[0].base_url: does not start with http:// or https://'],
  ['a model without its upstream name', (c) => delete c.groups[0].models[1].upstream, 'groups[0].models[1].upstream: required'],
  ['a model listed twice', (c) => c.groups[0].models.push({ external: 'm1', upstream: 'x' }), 'groups[0].models[2].external: duplicate'],
  ['an unknown Group field', (c) => (c.groups[0].bogus = 1), 'groups[0].bogus: not a known field'],
  ['a Group id at next_id', (c) => (c.next_id.group = 1), 'groups[0].id: not below next_id'],
  ['an unknown protocol', (c) => (c.access_keys[0].protocols = ['x-nope']), 'access_keys[0].protocols[0]: must be a known protocol_id'],
  ['an access key naming no Group', (c) => (c.access_keys[0].groups = [99]), 'access_keys[0].groups[0]: names no stored group (99)'],
  ['an access key without its sealed value', (c) => delete c.access_keys[0].sealed, 'access_keys[0].sealed: required'],
  ['a credential of no stored Group', (c) => (c.credentials[0].group_id = 99), 'credentials[0].group_id: names no stored group (99)'],
  ['a credential kind the channel has not', (c) => (c.credentials[0].kind = OTHER_KIND), 'credentials[0].kind: kind not of channel'],
  ['a credential field the kind has not', (c) => (c.credentials[0].fields.region = 'x'), 'credentials[0].fields.region: not a field of kind api_key'],
  ['a cooldown that is no time', (c) => (c.credentials[0].cooldown_until = 'soon'), 'credentials[0].cooldown_until: must match format "date-time"'],
  ['a proxy the upstream client cannot use', (c) => (c.credentials[0].proxy_url = 'ftp://proxy.test'), 'credentials[0].proxy_url: '],
  ['a negative price', (c) => (c.model_prices[0].input_per_mtok = -1), 'model_prices[0].input_per_mtok: must be >= 0'],
  ['a price beyond the API range', (c) => (c.model_prices[0].input_per_mtok = 1e308), 'model_prices[0].input_per_mtok: must be <= 1000000'],
  ['an unknown stage state', (c) => (c.credential_stages[0].state = 'done'), 'credential_stages[0].state: must be equal to one of the allowed values'],
  ['a journal note without its key', (c) => (c.idempotency_journal = [{ at: 1 }]), 'idempotency_journal[0].key: required'],
];

for (const [label, edit, expected] of EDITS) {
  t.test(`${label} stops the start, naming the file, the record and the field; the file untouched`, async (t) => {
    const { gw, file, config } = await seeded(t);
    edit(config);
    const text = JSON.stringify(config, null, 2);
    writeFileSync(file, text);
    const err = await createServer({ dataDir: gw.dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
    t.ok(err instanceof StoreFileError, 'a StoreFileError');
    t.equal((err as StoreFileError).file, file);
    t.match((err as Error).message, `${file}: unexpected content: ${expected}`, 'the file, the record, the field and the problem');
    t.notMatch((err as Error).message, '\n', 'one line');
    t.equal(readFileSync(file, 'utf8'), text, 'the file is exactly as it was');
  });
}

t.test('serve refuses a Group without its models with one line and exits 1', async (t) => {
  const { gw, file, config } = await seeded(t);
  delete config.groups[0].models;
  const text = JSON.stringify(config);
  writeFileSync(file, text);
  const child = spawnServe(['--port', '0', '--data', gw.dataDir], { AUTH_KEY: AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  t.notOk(await child.url.then(() => true, () => false), 'it never listens');
  child.kill('SIGKILL');
  const { code, stderr } = await child.exit;
  t.equal(code, 1);
  t.match(stderr, `${file}: unexpected content: groups[0].models: required`);
  t.equal(stderr.trim().split('\n').length, 1, 'one line');
  t.equal(readFileSync(file, 'utf8'), text);
});

t.test('rows written before weights, revisions and disabled_by existed, and no journal, still load', async (t) => {
  const { gw, file, config } = await seeded(t);
  for (const c of config.credentials) {
    delete c.weight;
    delete c.revision;
    delete c.disabled_by;
  }
  delete config.idempotency_journal;
  writeFileSync(file, JSON.stringify(config));
  await gw.restart();
  const groupId = config.groups[0].id;
  t.match((await gw.api('GET', `/api/groups/${groupId}/credentials`)).json.data, [{ weight: 1, revision: 0, state: 'active' }]);
});

t.test('a file as the current version writes it, with thousands of records, loads', async (t) => {
  const { gw, file, config } = await seeded(t);
  const many = 2000;
  const [group, credential, key, stage] = [config.groups[0], config.credentials[0], config.access_keys[0], config.credential_stages[0]];
  config.groups = Array.from({ length: many }, (_, i) => ({ ...group, id: i + 1, name: `g${i}` }));
  config.credentials = Array.from({ length: many }, (_, i) => ({ ...credential, id: i + 1, group_id: i + 1 }));
  config.access_keys = Array.from({ length: many }, (_, i) => ({ ...key, id: i + 1, name: `k${i}`, groups: [i + 1] }));
  config.credential_stages = Array.from({ length: many }, (_, i) => ({ ...stage, id: i + 1, group_id: i + 1 }));
  config.model_prices = Array.from({ length: many }, (_, i) => ({ ...config.model_prices[0], model: `m${i}` }));
  config.next_id = { group: many + 1, credential: many + 1, access_key: many + 1, credential_stage: many + 1 };
  t.ok(Array.isArray(config.idempotency_journal) && config.idempotency_journal.length > 0, 'the journal the API wrote is there');
  writeFileSync(file, JSON.stringify(config, null, 2));
  await gw.restart();
  t.equal((await gw.api('GET', '/api/access-keys')).json.data.length, many);
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, many);
  t.equal((await gw.api('GET', '/api/model-prices')).json.data.length, many);
});
