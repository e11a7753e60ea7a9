import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { REPO_ROOT } from '../helpers/repo-copy.ts';
import { spawnServe, type ServeExit } from '../helpers/spawn-serve.ts';
import { AUTH_KEY } from '../management/support/gateway.ts';
import { logRecord } from '../management/support/log-records.ts';

// A logs.sqlite the gateway cannot open, or cannot write, stops the start with one line naming
// it (exit 1), as other data files do; before, the first crashed with a stack trace naming no
// file, and the second started and lost every record.

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0;
/** Why a test that needs a user other than the file's owner cannot run here, or undefined when it can. */
const noOtherUser = isRoot && !hasSetpriv ? 'running as root without setpriv, so nothing here runs as another user' : undefined;

function dataDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-log-file-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A data directory whose logs.sqlite holds a record, written by the store itself. */
async function withLogs(t: Test): Promise<{ dir: string; file: string }> {
  const dir = dataDir(t);
  const logs = openSqliteLogStore(dir);
  logs.append(logRecord({ request_id: 'r1' }));
  await logs.close();
  return { dir, file: path.join(dir, 'logs.sqlite') };
}

interface Serve {
  /** Resolves once it listens; rejects when it exits first. */
  listening: Promise<void>;
  exit: Promise<ServeExit>;
  stop(): void;
}

/** `serve` from source as this user. */
function serveAsThisUser(t: Test, dir: string): Serve {
  const serve = spawnServe(['--port', '0', '--data', dir], { AUTH_KEY });
  t.teardown(() => serve.kill('SIGKILL'));
  return { listening: serve.url.then(() => undefined), exit: serve.exit, stop: () => serve.kill('SIGTERM') };
}

/**
 * `serve` from source; as root, it runs as nobody (setpriv), owning the data directory but not
 * logs.sqlite: permissions do not stop root. tap's NODE_OPTIONS hook writes under the
 * repository, which nobody cannot, so it is left out there.
 */
function serveAsOtherUser(t: Test, dir: string): Serve {
  if (!isRoot) return serveAsThisUser(t, dir);
  chownSync(dir, NOBODY, NOBODY);
  const args = ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', 'env', '-u', 'NODE_OPTIONS', process.execPath, '--import=tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--data', dir];
  const child = spawn('setpriv', args, { cwd: REPO_ROOT, env: { ...process.env, AUTH_KEY } });
  t.teardown(() => child.kill('SIGKILL'));
  let stdout = '';
  let stderr = '';
  let listened = (): void => {};
  const exit = new Promise<ServeExit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  const listening = new Promise<void>((resolve, reject) => {
    listened = resolve;
    void exit.then(() => reject(new Error(`exited before listening: ${stderr}`)));
  });
  listening.catch(() => {});
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (/switchyard http:/.test(stdout)) listened();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return { listening, exit, stop: () => child.kill('SIGTERM') };
}

/** How a start that should fail ends; one that listens instead is stopped, so that the assertions fail rather than wait. */
function failedStart(serve: Serve): Promise<ServeExit> {
  serve.listening.then(serve.stop, () => {});
  return serve.exit;
}

function assertOneLine(t: Test, exit: ServeExit, line: string): void {
  t.equal(exit.code, 1, exit.stderr);
  t.notMatch(exit.stderr, /^\s+at /m, 'no stack frames');
  t.notMatch(exit.stdout, /switchyard http:/, 'never listened');
  // The line saying where the AUTH_KEY comes from precedes any start.
  t.same(exit.stderr.split('\n').filter((l) => l !== '' && !l.includes('AUTH_KEY')), [line], 'one line on stderr');
}

t.test('a logs.sqlite that is no SQLite database: one line naming it, exit 1, file untouched', async (t) => {
  const dir = dataDir(t);
  const file = path.join(dir, 'logs.sqlite');
  const garbage = 'this is not a database, just text padding it out to a page or so. '.repeat(70);
  writeFileSync(file, garbage);
  const exit = await failedStart(serveAsThisUser(t, dir));
  assertOneLine(t, exit, `switchyard: ${file}: not a SQLite database. The file was left untouched; restore it from a backup, or move it away to start with an empty one.`);
  t.equal(readFileSync(file, 'utf8'), garbage, 'left as it was');
});

t.test('a logs.sqlite the gateway may not open: one line with the reason, exit 1', { skip: noOtherUser }, async (t) => {
  const { dir, file } = await withLogs(t);
  chmodSync(file, 0o000);
  const exit = await failedStart(serveAsOtherUser(t, dir));
  assertOneLine(t, exit, `switchyard: ${file}: cannot be opened: permission denied`);
});

t.test('a logs.sqlite the gateway can read but not write (another user\'s, or read-only) stops the start', { skip: noOtherUser }, async (t) => {
  const { dir, file } = await withLogs(t);
  // As root the file stays root's and readable by all, as after a start with sudo; otherwise the owner's own is made read-only.
  chmodSync(file, isRoot ? 0o644 : 0o444);
  const before = readFileSync(file);
  const exit = await failedStart(serveAsOtherUser(t, dir));
  assertOneLine(
    t,
    exit,
    `switchyard: ${file}: the gateway cannot write it (owned by another user, or read-only). Give the user the gateway runs as write access to it and to its directory (a start with sudo leaves it owned by root), then start again.`,
  );
  t.same(readFileSync(file), before, 'nothing written');
  t.equal(statSync(file).mode & 0o777, isRoot ? 0o644 : 0o444);
});

t.test('a writable logs.sqlite of the same user still starts', { skip: noOtherUser }, async (t) => {
  const { dir, file } = await withLogs(t);
  if (isRoot) chownSync(file, NOBODY, NOBODY);
  const serve = serveAsOtherUser(t, dir);
  await serve.listening;
  serve.stop();
  const exit = await serve.exit;
  t.equal(exit.code, 0, exit.stderr);
});
