import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway } from '../management/support/gateway.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson } from './helpers/dataplane-scenarios.ts';

// An upstream's 429 puts the credential in a cooldown without a rewrite of config.json (the
// store writes the cooldowns of a window together): the next request skips it all the same,
// and the management API shows it; config.json has it after the window.

const MODEL = 'chat-model';
const LIMITED = 'sk-cooldown-limited-000001';
const FINE = 'sk-cooldown-fine-0000000002';

t.test('a 429 cools the credential down at once, and config.json gets it with its window', async (t) => {
  const upstream = await startUpstream((req, res) => {
    if (String(req.headers.authorization) === `Bearer ${LIMITED}`) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600' }).end('{"error":{"message":"slow down"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(completionJson(MODEL));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, [MODEL], { base_url: upstream.url });
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: `${LIMITED}\n${FINE}` });
  const [limitedId] = (imported.json.data.created as Array<{ id: number }>).map((c) => c.id);
  const key = await seedAccessKey(gw);
  const file = join(gw.dataDir, 'config.json');
  const onDisk = () => ({ ino: statSync(file).ino, text: readFileSync(file, 'utf8') });
  const chat = async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' }, body: chatBody(MODEL) });
    await res.text();
    return res.status;
  };
  const limitedTries = () => upstream.requests.filter((r) => String(r.headers.authorization) === `Bearer ${LIMITED}`).length;

  const before = { file: onDisk(), generation: gw.server.store.generation() };
  // Round-robin: within two requests the limited credential is tried (and the other answers).
  for (let i = 0; i < 2 && limitedTries() === 0; i++) t.equal(await chat(), 200);
  t.equal(limitedTries(), 1, 'the limited credential was tried once and answered 429');
  t.same(onDisk(), before.file, 'config.json was not rewritten');
  t.equal(gw.server.store.generation(), before.generation, 'nor the configuration generation moved');

  for (let i = 0; i < 4; i++) t.equal(await chat(), 200);
  t.equal(limitedTries(), 1, 'the next requests skip the cooling credential');
  const shown = (await gw.api('GET', `/api/groups/${groupId}/credentials/${limitedId}`)).json.data;
  t.match(shown, { state: 'cooldown', cooldown_until: new Date(gw.clock.now + 3_600_000).toISOString() }, 'the management API shows the cooldown');

  const stored = () => (JSON.parse(readFileSync(file, 'utf8')) as { credentials: Array<{ id: number; cooldown_until: string | null }> }).credentials.find((c) => c.id === limitedId)?.cooldown_until;
  for (let i = 0; i < 500 && stored() !== shown.cooldown_until; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(stored(), shown.cooldown_until, 'config.json holds the cooldown after the window');
});
