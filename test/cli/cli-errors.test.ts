import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { REPO_ROOT } from '../helpers/repo-copy.ts';

// Each run of the CLI or codegen is a fresh tsx process (5 to 15 s apiece on a loaded machine):
// this file came near tap's 120 s per-file timeout there, so it sets its own.
t.setTimeout(300_000);

// README: 0 success, 1 a failure at run time, 2 a usage error; failures print one line.
function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  // The timeout bounds a regression where a bad value would start a server that never exits;
  // a start under tsx alone took up to 25 s on a loaded machine.
  const r = spawnSync(process.execPath, ['--import=tsx', 'src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, AUTH_KEY: '', TAP: undefined, TAP_CHILD_ID: undefined },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function assertOneLine(t: Test, stderr: string, mentions: string): void {
  t.notMatch(stderr, /^\s+at /m, 'no stack frames');
  const lines = stderr.split('\n').filter((l) => l !== '' && !l.includes('generated an AUTH_KEY'));
  t.equal(lines.length, 1, `one line: ${stderr}`);
  const line = lines[0] ?? '';
  t.ok(line.startsWith('switchyard: '), line);
  t.ok(line.includes(mentions), `names ${mentions}: ${line}`);
}

t.test('serve: an unusable data path prints one line naming it and exits 1', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-cli-errors-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'a-file');
  writeFileSync(file, 'not a directory');
  const configIsDir = path.join(dir, 'config-is-dir');
  mkdirSync(path.join(configIsDir, 'config.json'), { recursive: true });
  const emptyKey = path.join(dir, 'empty-key');
  mkdirSync(emptyKey);
  writeFileSync(path.join(emptyKey, 'auth_key'), '');

  const cases: Array<[string, string, string]> = [
    ['--data is a regular file', file, file],
    ['--data below a regular file', path.join(file, 'sub'), path.join(file, 'sub')],
    ['config.json is a directory', configIsDir, configIsDir],
    ['auth_key is empty', emptyKey, path.join(emptyKey, 'auth_key')],
  ];
  for (const [name, data, mentions] of cases) {
    t.test(name, async (t) => {
      const r = cli(['serve', '--port', '0', '--data', data]);
      t.equal(r.status, 1, r.stderr);
      assertOneLine(t, r.stderr, mentions);
    });
  }
});

t.test('serve: a host that does not resolve prints one line naming it and exits 1', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-cli-errors-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = cli(['serve', '--port', '0', '--data', dir, '--host', '999.1.1.1']);
  t.equal(r.status, 1, r.stderr);
  assertOneLine(t, r.stderr, '999.1.1.1');
});

t.test('serve: --port takes plain decimal digits in 0..65535, else exit 2 without starting', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-cli-errors-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const port of ['', '0x1F90', '8.080e3', '65536', '-1', ' 80']) {
    const r = cli(['serve', `--port=${port}`, '--data', dir]);
    t.equal(r.status, 2, `--port "${port}": ${r.stderr}`);
    t.equal(r.stdout, '', 'no server started');
    assertOneLine(t, r.stderr, '--port');
  }
});

t.test('manifest validate refuses extra arguments and options with exit 2', async (t) => {
  for (const extra of [['--bogus'], ['extra', 'stuff']]) {
    const r = cli(['manifest', 'validate', ...extra]);
    t.equal(r.status, 2, `${extra.join(' ')}: ${r.stderr}`);
    t.equal(r.stdout, '');
    assertOneLine(t, r.stderr, 'manifest validate');
  }
});

t.test('-h and --help print the commands, with serve --host, resolve --stream and the default port', async (t) => {
  for (const flag of ['-h', '--help']) {
    const r = cli([flag]);
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stderr, '');
    t.match(r.stdout, /^usage: switchyard <command>/);
    t.match(r.stdout, /serve .*--host HOST/);
    t.match(r.stdout, /resolve .*--stream/);
    t.match(r.stdout, /8080/);
  }
});

t.test('every command prints its own usage for --help and -h, exit 0', async (t) => {
  const calls = [...['serve', 'matrix', 'resolve', 'inspect', 'codegen', 'manifest'].map((c) => [c, '--help']), ['serve', '--port', '0', '-h']];
  for (const call of calls) {
    const r = cli(call);
    t.equal(r.status, 0, `${call.join(' ')}: ${r.stderr}`);
    t.equal(r.stderr, '');
    t.ok(r.stdout.startsWith(`usage: switchyard ${call[0]}`), `${call.join(' ')}: ${r.stdout}`);
  }
});
