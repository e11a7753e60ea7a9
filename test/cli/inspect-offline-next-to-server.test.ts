import t from 'tap';
import { seedAccessKey, seedGroup, startGateway } from '../management/support/gateway.ts';
import { runCli, type CliRun } from '../helpers/run-cli.ts';

// A running server holds its latest cooldown verdicts in memory for up to COOLDOWN_FLUSH_MS
// before writing them: offline inspection of its data directory says so, on stderr, so that
// --json stays one object on stdout.

function inspect(dataDir: string, keyId: number): Promise<CliRun> {
  return runCli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(keyId), '--json', '--data', dataDir]);
}

t.test('offline inspect of a directory a running server holds says that it reads what the server has written', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-inspect-000000031' });
  const key = await seedAccessKey(gw);

  const running = await inspect(gw.dataDir, key.id);
  t.equal(running.status, 0, running.stderr);
  t.match(JSON.parse(running.stdout), { routable: true }, 'stdout is the inspection alone');
  t.equal(running.stderr, `switchyard: note: a running server (pid ${process.pid}) holds ${gw.dataDir}; this reads what it has written, which lacks its requests in flight and may lack its latest credential cooldowns: --url asks the server itself\n`);

  await gw.stop();
  const stopped = await inspect(gw.dataDir, key.id);
  t.equal(stopped.status, 0, stopped.stderr);
  t.equal(stopped.stderr, '', 'no note once the server has stopped (and written everything)');
});
