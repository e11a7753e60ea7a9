import { randomUUID } from 'node:crypto';
import { Agent, type ServerResponse } from 'node:http';
import t from 'tap';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { completeChat } from '../helpers/complete-chat.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { call } from '../management/support/http-client.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const AUTH_KEY = 'second-signal-test-auth-key-0123456789';

async function allRecordIds(url: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await call(url, 'GET', `/api/logs?limit=500${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, { token: AUTH_KEY });
    if (page.status !== 200) throw new Error(`GET /api/logs answered ${page.status}: ${page.text}`);
    for (const item of page.json.data.items as Array<{ request_id: string }>) ids.add(item.request_id);
    cursor = page.json.data.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return ids;
}

t.test('a second SIGTERM under load cuts the requests in flight but still writes the record of every answered request', async (t) => {
  // Before the stop begins, the upstream stops answering: requests are still in flight when the
  // second signal comes, more than a second after the first (sooner, it is taken for a copy).
  let holding = false;
  const held: ServerResponse[] = [];
  const upstream = await startUpstream((_req, res) => {
    if (holding) {
      held.push(res);
      return;
    }
    // A few milliseconds upstream: requests are in flight when the signals come.
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}');
    }, 5);
  });
  t.teardown(() => {
    for (const res of held) res.destroy();
    return upstream.close();
  });
  const dataDir = tempDataDir(t);
  const child = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  const url = await child.url;

  const create = (p: string, body: unknown) => call(url, 'POST', p, { token: AUTH_KEY, body, headers: { 'Idempotency-Key': randomUUID() } });
  const group = (await create('/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat' }] })).json.data;
  t.equal((await create(`/api/groups/${group.id}/credentials/import`, { credentials: 'sk-second-signal-0001' })).status, 200);
  const key = (await create('/api/access-keys', { name: 'k', protocols: ['x-completions'] })).json.data;

  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  t.teardown(() => agent.destroy());
  const answered: string[] = [];
  let running = true;
  const clients = Array.from({ length: 8 }, async () => {
    while (running) {
      const id = (await completeChat(url, key.value, agent).catch(() => undefined))?.requestId;
      if (id !== undefined) answered.push(id);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  // Enough traffic that records wait in the log store's open batch when the signals come.
  while (answered.length < 300) await new Promise((resolve) => setTimeout(resolve, 20));
  holding = true;
  // Requests wait at the upstream from now on: some are surely in flight when the second signal comes.
  while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  child.kill('SIGTERM');
  // The gateway times the second from when it handled the first: under load that can be late.
  await child.printed(/SIGTERM received/);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  child.kill('SIGTERM');
  // An impatient third one changes nothing: the records still get their bounded moment (a kill by it would leave no exit code).
  await new Promise((resolve) => setTimeout(resolve, 5));
  child.kill('SIGTERM');
  const { code, stdout, stderr } = await child.exit;
  running = false;
  await Promise.all(clients);

  t.equal(code, 1, 'a shutdown cut short exits 1');
  t.match(stdout, /second signal/);

  const restarted = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => restarted.kill('SIGKILL'));
  const ids = await allRecordIds(await restarted.url);
  const missing = answered.filter((id) => !ids.has(id));
  const lost = /(\d+) request records could not be written/.exec(stderr);
  if (lost === null) t.same(missing, [], `each of the ${answered.length} answered requests has its record`);
  else t.ok(missing.length <= Number(lost[1]), `the ${missing.length} answered requests without a record are among the ${lost[1]} said lost`);
  restarted.kill('SIGTERM');
  t.equal((await restarted.exit).code, 0);
});
