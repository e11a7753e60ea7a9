import t from 'tap';
import { seedAccessKey, startGateway } from '../management/support/gateway.ts';
import { runCli } from '../helpers/run-cli.ts';

// A credential disabled keeps the cooldown_until of an earlier cooldown (the store clears it
// only on enable): the summary says why it is disabled, not until when it once cooled down.

t.test('switchyard inspect says why a credential once cooled down is disabled, and until when one cools down now', async (t) => {
  const gw = await startGateway(t);
  const groupId = (await gw.create('/api/groups', { name: 'g', channel: 'ch02', base_url: 'https://upstream.test', models: [{ external: 'chat-model', upstream: 'vendor-chat' }] })).json.data.id as number;
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-inspect-000000021\nsk-inspect-000000022\nsk-inspect-000000023' });
  const [past, running, cooling] = await gw.server.store.credentials.list(groupId);
  const store = gw.server.store.credentials;
  // The CLI reads on the real clock: one cooldown long over, two still running.
  const over = new Date(Date.now() - 3_600_000).toISOString();
  const until = new Date(Date.now() + 3_600_000).toISOString();
  // As the data plane's verdicts set them: a 429, then (once over, or while it runs) a 401.
  await store.setState(groupId, past!.id, { to: 'cooldown', until: over });
  await store.setState(groupId, past!.id, { to: 'disabled', reason: 'upstream answered 401' });
  await store.setState(groupId, running!.id, { to: 'cooldown', until });
  await store.setState(groupId, running!.id, { to: 'disabled', reason: 'upstream answered 403' });
  await store.setState(groupId, cooling!.id, { to: 'cooldown', until });
  const key = await seedAccessKey(gw);
  await gw.stop();

  const { stdout } = await runCli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(key.id), '--data', gw.dataDir]);
  const line = (id: number) => stdout.split('\n').find((l) => l.startsWith(`  credential #${id} `));
  t.equal(line(past!.id), `  credential #${past!.id} api_key disabled: credential_disabled (upstream answered 401)`, 'disabled after a cooldown long over');
  t.equal(line(running!.id), `  credential #${running!.id} api_key disabled: credential_disabled (upstream answered 403)`, 'disabled during a cooldown');
  t.equal(line(cooling!.id), `  credential #${cooling!.id} api_key cooldown: credential_cooldown until ${until}`, 'cooling down');
});
