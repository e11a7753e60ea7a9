import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createServer, type ServerOptions } from '../../src/server/create-server.ts';
import { DataDirInUseError } from '../../src/server/data-dir-in-use-error.ts';
import { lockDataDir } from '../../src/server/data-dir-lock.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { call } from './support/http-client.ts';
import { AUTH_KEY, tempDataDir } from './support/gateway.ts';

const LOCK = 'switchyard.lock';

const options = (dataDir: string): ServerOptions => ({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined });

const createGroup = (url: string, name: string) => call(url, 'POST', '/api/groups', { token: AUTH_KEY, body: { name, channel: 'ch02' }, headers: { 'Idempotency-Key': randomUUID() } });

t.test('a second server on the same data directory refuses to start, naming the directory and the pid', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await createServer(options(dataDir));
  t.teardown(() => first.close());

  const err = await createServer(options(dataDir)).then(
    (second) => second.close().then(() => undefined),
    (e: unknown) => e,
  );
  t.ok(err instanceof DataDirInUseError, 'a DataDirInUseError');
  t.equal((err as DataDirInUseError).pid, process.pid, 'the pid holding it is this process, which runs the first server');
  t.match((err as Error).message, dataDir);
  t.match((err as Error).message, String(process.pid));
  t.notMatch((err as Error).message, /\n/, 'one line');

  // The refused start left the first server's hold and its writes alone.
  t.equal(readFileSync(path.join(dataDir, LOCK), 'utf8').trim(), String(process.pid));
  const created = await createGroup(first.url, 'via-first');
  t.equal(created.status, 201);
  await first.close();
  const stored = JSON.parse(readFileSync(path.join(dataDir, 'config.json'), 'utf8')) as { groups: Array<{ name: string }> };
  t.same(stored.groups.map((g) => g.name), ['via-first']);
});

t.test('a clean close releases the directory for the next server', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await createServer(options(dataDir));
  t.ok(existsSync(path.join(dataDir, LOCK)), 'held while running');
  await first.close();
  t.notOk(existsSync(path.join(dataDir, LOCK)), 'removed on close');
  const next = await createServer(options(dataDir));
  t.teardown(() => next.close());
  t.equal((await createGroup(next.url, 'after-restart')).status, 201);
});

t.test('a lock left by a process that died is taken over', async (t) => {
  const dataDir = tempDataDir(t);
  // A pid that cannot be alive: a child that has exited and been reaped.
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  t.ok(dead !== undefined && dead !== process.pid);
  writeFileSync(path.join(dataDir, LOCK), `${dead}\n`);

  const server = await createServer(options(dataDir));
  t.teardown(() => server.close());
  t.equal(readFileSync(path.join(dataDir, LOCK), 'utf8').trim(), String(process.pid), 'now held by this server');
  t.equal((await createGroup(server.url, 'after-crash')).status, 201);
});

t.test('servers that start together on a stale lock end with exactly one holder', async (t) => {
  const dead = spawnSync(process.execPath, ['-e', '']).pid!;
  // The race is in the order of file operations, so it is run many times.
  for (let trial = 0; trial < 100; trial++) {
    const dataDir = tempDataDir(t);
    writeFileSync(path.join(dataDir, LOCK), `${dead}\n`);
    const starts = await Promise.allSettled([lockDataDir(dataDir), lockDataDir(dataDir), lockDataDir(dataDir), lockDataDir(dataDir)]);
    const held = starts.filter((s) => s.status === 'fulfilled');
    const refused = starts.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (held.length !== 1 || !refused.every((r) => r.reason instanceof DataDirInUseError)) {
      t.fail(`trial ${trial}: ${held.length} holders, refusals ${refused.map((r) => String(r.reason)).join('; ')}`);
      return;
    }
    t.equal(readFileSync(path.join(dataDir, LOCK), 'utf8').trim(), String(process.pid));
    await held[0]!.value.release();
    t.same(readdirSync(dataDir).filter((f) => f.startsWith(LOCK)), [], 'no lock, guard or temporary file left');
  }
});

t.test('a takeover guard left by a process that died does not keep the directory locked', async (t) => {
  const dataDir = tempDataDir(t);
  const dead = spawnSync(process.execPath, ['-e', '']).pid!;
  writeFileSync(path.join(dataDir, LOCK), `${dead}\n`);
  writeFileSync(path.join(dataDir, `${LOCK}.takeover`), `${dead}\n`);
  const lock = await lockDataDir(dataDir);
  t.equal(readFileSync(path.join(dataDir, LOCK), 'utf8').trim(), String(process.pid));
  t.notOk(existsSync(path.join(dataDir, `${LOCK}.takeover`)), 'the dead guard is gone');
  await lock.release();
});

t.test('a start that fails after taking the lock releases it', async (t) => {
  const dataDir = tempDataDir(t);
  writeFileSync(path.join(dataDir, 'config.json'), '{"version": 1,');
  await t.rejects(createServer(options(dataDir)));
  t.notOk(existsSync(path.join(dataDir, LOCK)), 'no lock left behind');
});

t.test('serve on a data directory a running server holds prints one line and exits 1', async (t) => {
  const dataDir = tempDataDir(t);
  const running = await createServer(options(dataDir));
  t.teardown(() => running.close());
  const { code, stderr } = await spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY: 'k' }).exit;
  t.equal(code, 1);
  const lines = stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${stderr}`);
  t.match(lines[0], dataDir);
  t.match(lines[0], `pid ${process.pid}`);
  t.notMatch(stderr, /at .*\.ts/, 'no stack');
});
