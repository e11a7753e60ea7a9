import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { spawnServe, type ServeProcess } from '../helpers/spawn-serve.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// A stop asked for while `switchyard serve` starts, or the moment it is ready (split from
// serve-duplicate-signal.test.ts: each start is a process of its own, and the two files' starts
// together came near tap's per-file timeout on a loaded machine).

const AUTH_KEY = 'sigterm-at-start-test-auth-key-0123456789';
const LOCK_FILE = 'switchyard.lock';
const LOG_DB_FILE = 'logs.sqlite';

/** `switchyard serve` on a port of its own, killed at the end of `t`. */
function serve(t: Test, dataDir: string): ServeProcess {
  const child = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  return child;
}

t.test('a SIGTERM sent the moment the ready line shows stops cleanly', async (t) => {
  // A few times: the moment right after the ready line is short.
  for (let run = 0; run < 5; run++) {
    const dataDir = tempDataDir(t);
    const child = serve(t, dataDir);
    void child.printed(/switchyard http:\/\//).then(() => child.kill('SIGTERM'));
    const { code, signal, stdout } = await child.exit;
    t.same({ code, signal }, { code: 0, signal: null }, `run ${run}: exits 0, not killed by the signal`);
    t.match(stdout, /switchyard: stopped\n/);
    t.notOk(existsSync(path.join(dataDir, LOCK_FILE)), 'the lock file is removed');
  }
});

t.test('a SIGTERM while starting ends the start as a stop', async (t) => {
  const dataDir = tempDataDir(t);
  const lock = path.join(dataDir, LOCK_FILE);
  // Another connection holds the log database, so the start is still starting when the
  // signal comes: without it a fast start may be listening already.
  const holder = new Database(path.join(dataDir, LOG_DB_FILE));
  holder.exec('BEGIN EXCLUSIVE');
  t.teardown(() => holder.close());
  const child = serve(t, dataDir);
  let exited = false;
  void child.exit.then(() => (exited = true));
  // The lock is the start's first step; the stores, the log writer and the listening come after.
  while (!existsSync(lock) && !exited) await sleep(1);
  child.kill('SIGTERM');
  await child.printed(/SIGTERM received while starting/);
  holder.exec('ROLLBACK');
  const { code, signal, stdout } = await child.exit;
  t.same({ code, signal }, { code: 0, signal: null }, 'exits 0, not killed by the signal');
  t.match(stdout, /SIGTERM received while starting/);
  t.notMatch(stdout, /switchyard http:/);
  t.match(stdout, /switchyard: stopped\n/);
  t.notOk(existsSync(lock), 'the lock file is removed');
});
