import { existsSync, readFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { createServer, type ServerOptions } from '../../src/server/create-server.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// Every start names where the management key comes from, in one line, never its value.

const ENV_KEY = 'sy-admin-from-the-environment-0123456789';

async function start(dataDir: string, more: Partial<ServerOptions>): Promise<string[]> {
  const lines: string[] = [];
  const server = await createServer({ dataDir, host: '127.0.0.1', port: 0, env: {}, log: (line) => lines.push(line), ...more });
  await server.close();
  return lines;
}

function keyLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes('AUTH_KEY'));
}

t.test('exported AUTH_KEY: the line names the environment variable', async (t) => {
  const dir = tempDataDir(t);
  const lines = await start(dir, { env: { AUTH_KEY: ENV_KEY } });
  t.same(keyLines(lines), ['switchyard: the AUTH_KEY (management key) comes from the AUTH_KEY environment variable.']);
  t.notOk(lines.some((l) => l.includes(ENV_KEY)), 'the value is not printed');
  t.notOk(existsSync(path.join(dir, 'auth_key')), 'no file is made');
});

t.test('the key file: named when generated and on every start after', async (t) => {
  const dir = tempDataDir(t);
  const file = path.join(dir, 'auth_key');
  const first = await start(dir, {});
  t.same(keyLines(first), [`switchyard: generated an AUTH_KEY and stored it in ${file} (readable only by its owner).`]);
  const second = await start(dir, { env: { AUTH_KEY: '  ' } });
  t.same(keyLines(second), [`switchyard: the AUTH_KEY (management key) is in ${file}.`], 'a blank variable is no key: the file is named');
  const value = readFileSync(file, 'utf8').trim();
  t.notOk([...first, ...second].some((l) => l.includes(value)), 'the value is not printed');
});

t.test('a first start that failed (port in use) made the key: the next start names the file', async (t) => {
  const dir = tempDataDir(t);
  const blocker = createNetServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const failed: string[] = [];
  const port = (blocker.address() as { port: number }).port;
  await t.rejects(createServer({ dataDir: dir, host: '127.0.0.1', port, env: {}, log: (line) => failed.push(line) }), { code: 'EADDRINUSE' });
  t.match(keyLines(failed), [/generated an AUTH_KEY/]);
  t.same(keyLines(await start(dir, {})), [`switchyard: the AUTH_KEY (management key) is in ${path.join(dir, 'auth_key')}.`]);
});

t.test('a key given in the options is said to be', async (t) => {
  const lines = await start(tempDataDir(t), { authKey: ENV_KEY, env: { AUTH_KEY: 'other-key-0123456789' } });
  t.same(keyLines(lines), ['switchyard: the AUTH_KEY (management key) is the one given in the server options.']);
  t.notOk(lines.some((l) => l.includes(ENV_KEY)));
});
