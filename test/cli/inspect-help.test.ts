import t from 'tap';
import { runCli as cli } from '../helpers/run-cli.ts';

// A start under tsx can take many seconds on a loaded machine.
t.setTimeout(180_000);

// README and management-api.md document `inspect ... --url URL --timeout SECONDS`: the usage
// --help prints names every option the command takes, as its usage error does.
t.test('inspect --help and switchyard --help print the usage a usage error prints, --timeout included', async (t) => {
  const refused = await cli(['inspect', '--protocol', 'x-completions', '--model', 'm']);
  t.equal(refused.status, 2, refused.stderr);
  const usage = refused.stderr.split('\n').find((l) => l.startsWith('usage: switchyard inspect'));
  t.ok(usage?.includes('--timeout SECONDS'), `usage error: ${refused.stderr}`);

  const help = await cli(['inspect', '--help']);
  t.equal(help.status, 0, help.stderr);
  t.equal(help.stdout.split('\n')[0], usage, 'inspect --help');

  const all = await cli(['--help']);
  t.equal(all.status, 0, all.stderr);
  t.ok(usage !== undefined && all.stdout.includes(usage.replace('usage: switchyard ', '  ')), `switchyard --help: ${all.stdout}`);
});
