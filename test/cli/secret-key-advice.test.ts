import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createServer } from '../../src/server/create-server.ts';
import { REPO_ROOT } from '../helpers/repo-copy.ts';
import { AUTH_KEY, seedAccessKey, seedGroup, startGateway, tempDataDir } from '../management/support/gateway.ts';

// The line printed for an unusable secret.key says what the operator can do, and doing it works:
// moving the key away alone only says "missing" again.

function serveLine(dataDir: string): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, ['--import=tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--data', dataDir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 20_000,
    env: { ...process.env, AUTH_KEY, TAP: undefined, TAP_CHILD_ID: undefined },
  });
  const lines = r.stderr.split('\n').filter((l) => l !== '' && !l.includes('AUTH_KEY (management key)'));
  return { status: r.status, stderr: lines.join('\n') };
}

/** A data directory holding a Group, a credential and an access key; the server stopped. */
async function withSecrets(t: Test): Promise<string> {
  const dataDir = tempDataDir(t);
  const gw = await startGateway(t, { dataDir });
  const groupId = await seedGroup(gw);
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-advice-0000000001' });
  await seedAccessKey(gw);
  await gw.stop();
  return dataDir;
}

async function startsWithGroups(t: Test, dataDir: string): Promise<number> {
  const server = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined });
  t.teardown(() => server.close());
  t.ok(existsSync(path.join(dataDir, 'secret.key')), 'a new key is made');
  return (await server.store.groups.list()).length;
}

const KEY_NEEDED_ADVICE =
  'The file was left untouched; restore it from a backup; without it the stored credentials and access keys cannot be read. With no backup, empty the "credentials" and "access_keys" lists of config.json next to it (Groups and settings stay; import the credentials and create the access keys again), or move config.json away to start empty: the next start then makes a new key.';

t.test('a missing secret.key while secrets are stored: the printed line, then each way out it names', async (t) => {
  const dataDir = await withSecrets(t);
  const keyFile = path.join(dataDir, 'secret.key');
  unlinkSync(keyFile);
  const r = serveLine(dataDir);
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: ${keyFile}: the encryption key file is missing but stored secrets need it. ${KEY_NEEDED_ADVICE}`);
  t.notMatch(r.stderr, /move it away/, 'not the advice that leads back here');

  const configFile = path.join(dataDir, 'config.json');
  const config = readFileSync(configFile, 'utf8');
  const emptied = JSON.parse(config);
  emptied.credentials = [];
  emptied.access_keys = [];
  writeFileSync(configFile, JSON.stringify(emptied));
  t.equal(await startsWithGroups(t, dataDir), 1, 'emptied lists: the Group stays');
});

t.test('moving config.json away as well starts empty', async (t) => {
  const dataDir = await withSecrets(t);
  unlinkSync(path.join(dataDir, 'secret.key'));
  renameSync(path.join(dataDir, 'config.json'), path.join(dataDir, 'config.json.lost'));
  t.equal(await startsWithGroups(t, dataDir), 0);
});

t.test('a damaged secret.key while secrets are stored: the same advice', async (t) => {
  const dataDir = await withSecrets(t);
  const keyFile = path.join(dataDir, 'secret.key');
  writeFileSync(keyFile, 'not a key\n');
  const r = serveLine(dataDir);
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: ${keyFile}: the encryption key file does not hold a 32-byte base64 key. ${KEY_NEEDED_ADVICE}`);
});

t.test('a damaged secret.key with no secrets stored: moving it away is the way out', async (t) => {
  const dataDir = tempDataDir(t);
  const gw = await startGateway(t, { dataDir });
  await seedGroup(gw);
  await gw.stop();
  const keyFile = path.join(dataDir, 'secret.key');
  writeFileSync(keyFile, 'not a key\n');
  const r = serveLine(dataDir);
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: ${keyFile}: the encryption key file does not hold a 32-byte base64 key. The file was left untouched; no stored secret needs it: move it away and the next start makes a new one.`);
  renameSync(keyFile, `${keyFile}.bad`);
  t.equal(await startsWithGroups(t, dataDir), 1);
});
