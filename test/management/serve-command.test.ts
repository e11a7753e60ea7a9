import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../helpers/repo-copy.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { call } from './support/http-client.ts';
import { tempDataDir } from './support/gateway.ts';

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  t.test(`serve starts with nothing and ${signal} stops it without losing an acknowledged write`, async (t) => {
    const dataDir = tempDataDir(t);
    const child = spawnServe(['--port', '0', '--data', dataDir]);
    t.teardown(() => child.kill('SIGKILL'));
    const url = await child.url;
    const authKey = readFileSync(path.join(dataDir, 'auth_key'), 'utf8').trim();
    const created = await call(url, 'POST', '/api/groups', { token: authKey, body: { name: 'before', channel: 'ch02' }, headers: { 'Idempotency-Key': randomUUID() } });
    t.equal(created.status, 201);
    const inFlight = Array.from({ length: 5 }, (_, i) =>
      call(url, 'POST', '/api/groups', { token: authKey, body: { name: `during-${i}`, channel: 'ch02' }, headers: { 'Idempotency-Key': randomUUID() } }).catch(() => undefined),
    );
    child.kill(signal);
    const answers = await Promise.all(inFlight);
    const { code, stdout, stderr } = await child.exit;
    t.equal(code, 0, 'a clean exit');
    t.match(stdout, new RegExp(`${signal} received`));
    t.match(stdout, /stopped/);
    t.match(stderr, /generated an AUTH_KEY and stored it in .*auth_key/);
    const stored = JSON.parse(readFileSync(path.join(dataDir, 'config.json'), 'utf8')) as { groups: Array<{ id: number; name: string }> };
    t.ok(stored.groups.some((g) => g.name === 'before'));
    for (const a of answers) {
      if (a?.status === 201) t.ok(stored.groups.some((g) => g.id === a.json.data.id), `acknowledged group ${a.json.data.id} is on disk`);
    }
  });
}

t.test('a SIGHUP from a console that is gone (its stdout closed) still stops serve cleanly, nothing acknowledged lost', async (t) => {
  const dataDir = tempDataDir(t);
  const child = spawn(process.execPath, ['--import=tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--data', dataDir], { cwd: REPO_ROOT, env: { ...process.env, AUTH_KEY: undefined } });
  t.teardown(() => child.kill('SIGKILL'));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let stdout = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    child.on('close', () => reject(new Error(`serve exited before it listened: ${stdout}`)));
  });
  const authKey = readFileSync(path.join(dataDir, 'auth_key'), 'utf8').trim();
  const created = await call(url, 'POST', '/api/groups', { token: authKey, body: { name: 'acknowledged', channel: 'ch02' }, headers: { 'Idempotency-Key': randomUUID() } });
  t.equal(created.status, 201);
  // The terminal closed: every later write to stdout fails (EPIPE).
  child.stdout.destroy();
  child.kill('SIGHUP');
  t.equal(await exited, 0, 'a clean exit, not a crash on the failed console write');
  const stored = JSON.parse(readFileSync(path.join(dataDir, 'config.json'), 'utf8')) as { groups: Array<{ name: string }> };
  t.ok(stored.groups.some((g) => g.name === 'acknowledged'), 'the acknowledged write is on disk');
});

t.test('serve refuses to start over a corrupted data file, naming it', async (t) => {
  const dataDir = tempDataDir(t);
  writeFileSync(path.join(dataDir, 'config.json'), '{"version": 1,');
  const { code, stderr } = await spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY: 'k' }).exit;
  t.equal(code, 1);
  t.match(stderr, path.join(dataDir, 'config.json'));
  t.equal(readFileSync(path.join(dataDir, 'config.json'), 'utf8'), '{"version": 1,');
});

t.test('serve rejects a bad port', async (t) => {
  const { code, stderr } = await spawnServe(['--port', 'eighty']).exit;
  t.equal(code, 2);
  t.match(stderr, /--port must be a port number/);
});

t.test('serve on a port already in use says so and exits 1, not with the usage code', async (t) => {
  const taken = createNetServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  const { code, stderr } = await spawnServe(['--port', String(port), '--data', tempDataDir(t)], { AUTH_KEY: 'k' }).exit;
  t.equal(code, 1);
  t.match(stderr, new RegExp(`port ${port} on 127.0.0.1 is already in use`));
});
