import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { fillTheDisk } from '../helpers/fill-the-disk.ts';
import { startGateway } from './support/gateway.ts';

// The management plane over a configuration whose writes the disk refuses (full): what writes answer, what health shows, what stays.

t.test('a configuration write the disk refuses answers 503 CONFIG_STORE_UNAVAILABLE, leaves the configuration as on disk, and health says failing until a write succeeds', async (t) => {
  const gw = await startGateway(t);
  t.equal((await gw.create('/api/groups', { name: 'before', channel: 'ch02' })).status, 201);
  t.equal((await gw.api('PUT', '/api/settings', { body: { log_retention_days: 30 } })).status, 200);
  t.match((await gw.api('GET', '/api/health')).json.data, { status: 'ok', stores: { config: 'ok' } });
  const groupsBefore = (await gw.api('GET', '/api/groups')).json.data;
  const settingsBefore = (await gw.api('GET', '/api/settings')).json.data;

  const freeTheDisk = fillTheDisk(t);
  const created = await gw.create('/api/groups', { name: 'during', channel: 'ch02' });
  t.equal(created.status, 503, 'a create (idempotent operation)');
  t.match(created.json, { code: 'CONFIG_STORE_UNAVAILABLE' });
  const saved = await gw.api('PUT', '/api/settings', { body: { log_retention_days: 7 } });
  t.equal(saved.status, 503, 'a settings save (no Idempotency-Key)');
  t.match(saved.json, { code: 'CONFIG_STORE_UNAVAILABLE' });

  t.same((await gw.api('GET', '/api/groups')).json.data, groupsBefore, 'the Groups read back as before the failed create');
  t.same((await gw.api('GET', '/api/settings')).json.data, settingsBefore, 'the settings read back as before the failed save');
  t.notOk(
    readdirSync(gw.dataDir).some((f) => f.endsWith('.tmp')),
    'no temporary file left behind',
  );
  const health = (await gw.api('GET', '/api/health')).json.data;
  t.match(health, { status: 'degraded', stores: { config: 'failing', logs: 'ok' } });

  freeTheDisk();
  const after = await gw.create('/api/groups', { name: 'after', channel: 'ch02' });
  t.equal(after.status, 201, 'writes work again once the disk has room');
  t.match((await gw.api('GET', '/api/health')).json.data, { status: 'ok', stores: { config: 'ok' } });
  const onDisk = JSON.parse(readFileSync(path.join(gw.dataDir, 'config.json'), 'utf8')) as { groups: Array<{ name: string }> };
  t.same(
    onDisk.groups.map((g) => g.name),
    ['before', 'after'],
    'config.json has what was acknowledged, and not the refused change',
  );
  const served = (await gw.api('GET', '/api/groups')).json.data;
  await gw.restart();
  t.same((await gw.api('GET', '/api/groups')).json.data, served, 'what was served is what a restart reads from disk');
  t.equal((await gw.api('GET', '/api/settings')).json.data.log_retention_days, 30, 'the refused settings save is not on disk either');
});
