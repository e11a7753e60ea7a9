import { spawnSync } from 'node:child_process';
import t from 'tap';
import { REPO_ROOT } from '../helpers/repo-copy.ts';

// A start under tsx can take many seconds on a loaded machine.
t.setTimeout(180_000);

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import=tsx', 'src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, AUTH_KEY: '', TAP: undefined, TAP_CHILD_ID: undefined },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// README and management-api.md document `inspect ... --url URL --timeout SECONDS`: the usage
// --help prints names every option the command takes, as its usage error does.
t.test('inspect --help and switchyard --help print the usage a usage error prints, --timeout included', async (t) => {
  const refused = cli(['inspect', '--protocol', 'x-completions', '--model', 'm']);
  t.equal(refused.status, 2, refused.stderr);
  const usage = refused.stderr.split('\n').find((l) => l.startsWith('usage: switchyard inspect'));
  t.ok(usage?.includes('--timeout SECONDS'), `usage error: ${refused.stderr}`);

  const help = cli(['inspect', '--help']);
  t.equal(help.status, 0, help.stderr);
  t.equal(help.stdout.split('\n')[0], usage, 'inspect --help');

  const all = cli(['--help']);
  t.equal(all.status, 0, all.stderr);
  t.ok(usage !== undefined && all.stdout.includes(usage.replace('usage: switchyard ', '  ')), `switchyard --help: ${all.stdout}`);
});
