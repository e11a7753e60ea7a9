import { createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { AUTH_KEY, seedAccessKey, startGateway, type Gateway } from '../management/support/gateway.ts';
import { runCli, type CliRun } from '../helpers/run-cli.ts';

// inspect --url reaches a server on any port serve takes, and says why one cannot be reached.

/** `url` undefined: offline, on a data directory that does not exist. */
function inspect(url: string | undefined, extra: string[] = []): Promise<CliRun> {
  const where = url === undefined ? ['--data', '/nonexistent-switchyard-data'] : ['--url', url];
  return runCli(['inspect', '--protocol', 'x-completions', '--model', 'chat-model', '--access-key', '1', '--json', ...where, ...extra], { AUTH_KEY });
}

/**
 * Ports the Fetch standard calls bad (fetch refuses them before connecting) that `serve --port`
 * takes. None is in the ephemeral range port 0 draws from: a test that binds port 0 never takes
 * one, and one in use is passed over.
 */
const FETCH_BLOCKED_PORTS = [6666, 6667, 6668, 6669, 6679, 6697, 10080, 6000, 5060];

async function gatewayOnFetchBlockedPort(t: Test): Promise<Gateway | undefined> {
  for (const port of FETCH_BLOCKED_PORTS) {
    try {
      return await startGateway(t, { port });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
  return undefined;
}

t.test('inspect --url asks a server listening on a port fetch refuses (6666 and the like)', async (t) => {
  const gw = await gatewayOnFetchBlockedPort(t);
  if (gw === undefined) return t.plan(0, 'every fetch-blocked port tried is in use');
  await seedAccessKey(gw);
  const r = await inspect(gw.url);
  t.equal(r.status, 1, r.stderr);
  t.equal(r.stderr, '', 'the server answered');
  t.match(JSON.parse(r.stdout), { routable: false, reason_code: 'model_not_visible', access_key: { id: 1 } });
});

t.test('inspect --url to a port nothing listens on says the connection was refused', async (t) => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  const r = await inspect(`http://127.0.0.1:${port}`);
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: cannot reach http://127.0.0.1:${port}: connection refused\n`);
});

t.test('inspect --url to a server that never answers gives up after --timeout and says so', async (t) => {
  const sockets: Socket[] = [];
  const silent = createServer((socket) => {
    sockets.push(socket.on('error', () => undefined));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  const r = await inspect(`http://127.0.0.1:${port}`, ['--timeout', '1']);
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
  t.equal(sockets.length, 1, 'the CLI connected');
  t.equal(r.status, 1);
  t.equal(r.stderr, `switchyard: cannot reach http://127.0.0.1:${port}: no answer within 1 s (--timeout)\n`);
});

t.test('inspect --timeout is refused without --url, and when it is not whole seconds from 1 to 3600', async (t) => {
  const offline = await inspect(undefined, ['--timeout', '5']);
  t.equal(offline.status, 2);
  t.match(offline.stderr, /--timeout applies to --url only/);
  for (const bad of ['0', '1.5', '3601', 'x']) {
    const r = await inspect('http://127.0.0.1:1', ['--timeout', bad]);
    t.equal(r.status, 2, bad);
    t.match(r.stderr, new RegExp(`--timeout must be the seconds to wait for the server, decimal digits from 1 to 3600, not "${bad.replace('.', '\\.')}"`), bad);
  }
});
