import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const AUTH_KEY = 'second-signal-while-starting-auth-key-0123456789';
const LOCK_FILE = 'switchyard.lock';
const LOG_DB_FILE = 'logs.sqlite';

t.test('a second signal while starting gives the start up at once, and the next start takes over its lock', async (t) => {
  const dataDir = tempDataDir(t);
  // Another connection holds the log database: the start waits for it (for the log store's
  // busy timeout, 5 s), as it would through a long migration.
  const holder = new Database(path.join(dataDir, LOG_DB_FILE));
  holder.exec('BEGIN EXCLUSIVE');
  t.teardown(() => holder.close());
  const child = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  let exited = false;
  void child.exit.then(() => (exited = true));
  // The lock is the start's first step: the signals are listened for by then.
  while (!existsSync(path.join(dataDir, LOCK_FILE)) && !exited) await sleep(5);
  child.kill('SIGTERM');
  await child.printed(/SIGTERM received while starting, stopping once started\n/);
  // More than a second after the gateway handled the first: not taken for a copy of it.
  await sleep(1200);
  child.kill('SIGINT');
  const { code, signal, stdout } = await child.exit;
  t.same({ code, signal }, { code: null, signal: 'SIGINT' }, 'dies by the second signal');
  t.match(stdout, /switchyard: second signal while starting, stopping now\n/);
  t.notMatch(stdout, /switchyard http:|cut short|switchyard: stopped/);
  t.ok(existsSync(path.join(dataDir, LOCK_FILE)), 'the lock is left behind');

  holder.exec('ROLLBACK');
  holder.close();
  const next = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => next.kill('SIGKILL'));
  await next.url;
  next.kill('SIGTERM');
  t.equal((await next.exit).code, 0, 'the next start took the lock over, and stops cleanly');
});
