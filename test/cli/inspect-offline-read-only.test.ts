import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { logRecord } from '../management/support/log-records.ts';
import { AUTH_KEY, seedAccessKey, startGateway, type Gateway } from '../management/support/gateway.ts';

// Each run of the CLI or codegen is a fresh tsx process (5 to 15 s apiece on a loaded machine):
// this file came near tap's 120 s per-file timeout there, so it sets its own.
t.setTimeout(300_000);

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../../bin/switchyard.js');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `asOther` runs it as user nobody when the tests run as root, for whom permissions do not stop writes. */
async function cli(args: string[], env: Record<string, string> = {}, asOther = false): Promise<CliResult> {
  const other = asOther && process.getuid?.() === 0;
  // tap re-adds its process-info hook (NODE_OPTIONS) to every child, and the hook writes under the repository, which nobody cannot.
  const [file, pre] = other ? ['env', ['-u', 'NODE_OPTIONS', process.execPath]] : [process.execPath, []];
  try {
    const { stdout, stderr } = await run(file, [...pre, BIN, 'inspect', ...args], { env: { ...process.env, ...env }, ...(other ? { uid: 65534, gid: 65534 } : {}) });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Name, mode and SHA-256 of every entry of the directory. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const file = path.join(dir, name);
    const mode = statSync(file).mode.toString(8);
    out[name] = statSync(file).isFile() ? `${mode} ${createHash('sha256').update(readFileSync(file)).digest('hex')}` : mode;
  }
  return out;
}

/** A data directory made by a real server (a Group with a credential, an AccessKey with a request quota), server stopped. */
async function madeByServer(t: Test): Promise<{ gw: Gateway; keyId: number }> {
  const gw = await startGateway(t, { openLogStore: async (dir) => openSqliteLogStore(dir) });
  const groupId = (await gw.create('/api/groups', { name: 'g', channel: 'ch02', base_url: 'https://upstream.test', models: [{ external: 'chat-model', upstream: 'vendor-chat' }] })).json.data.id;
  await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-inspect-000000001' });
  const key = await seedAccessKey(gw, { quota: { total: { requests: 10 } } });
  await gw.stop();
  t.ok(readdirSync(gw.dataDir).includes('logs.sqlite'), 'the server made logs.sqlite');
  return { gw, keyId: key.id };
}

const args = (dataDir: string, keyId: number) => ['--protocol', 'x-completions', '--model', 'chat-model', '--access-key', String(keyId), '--json', '--data', dataDir];

t.test('offline inspect reads the log store and leaves every file of the data directory byte-identical', async (t) => {
  const { gw, keyId } = await madeByServer(t);
  const logs = openSqliteLogStore(gw.dataDir);
  for (const id of ['r1', 'r2', 'r3']) logs.append(logRecord({ request_id: id, access_key_id: keyId, created_at: Date.now() - 60_000 }));
  await logs.close();
  const before = snapshot(gw.dataDir);

  const res = await cli(args(gw.dataDir, keyId));
  t.equal(res.code, 0, res.stderr);
  t.match(JSON.parse(res.stdout), { routable: true, access_key: { quota: { exceeded: false, lines: [{ scope: 'total', metric: 'requests', limit: 10, used: 3 }] } } }, 'the three appended records count');
  t.same(snapshot(gw.dataDir), before, 'no file created, changed or removed');
});

t.test('offline inspect of a read-only data directory writes nothing', async (t) => {
  const { gw, keyId } = await madeByServer(t);
  for (const name of readdirSync(gw.dataDir)) chmodSync(path.join(gw.dataDir, name), 0o444);
  chmodSync(gw.dataDir, 0o555);
  t.teardown(() => chmodSync(gw.dataDir, 0o700));
  const before = snapshot(gw.dataDir);
  const res = await cli(args(gw.dataDir, keyId), {}, true);
  t.equal(res.code, 0, res.stderr);
  t.equal(res.stderr, '');
  t.match(JSON.parse(res.stdout), { routable: true, access_key: { quota: { lines: [{ metric: 'requests', used: 0 }] } } });
  t.same(snapshot(gw.dataDir), before, 'bytes and modes unchanged');
});

t.test('offline inspect without logs.sqlite answers with no records', async (t) => {
  const { gw, keyId } = await madeByServer(t);
  rmSync(path.join(gw.dataDir, 'logs.sqlite'));
  const res = await cli(args(gw.dataDir, keyId));
  t.equal(res.code, 0, res.stderr);
  t.equal(JSON.parse(res.stdout).routable, true);
  t.notOk(readdirSync(gw.dataDir).some((name) => name.startsWith('logs.sqlite')), 'no log file created');
});

t.test('an unreadable data file is one line naming it, exit 1', async (t) => {
  const { gw, keyId } = await madeByServer(t);
  const logFile = path.join(gw.dataDir, 'logs.sqlite');
  writeFileSync(logFile, 'this is not a database, just text padding it out to a page or so. '.repeat(40));
  const corrupt = await cli(args(gw.dataDir, keyId));
  t.equal(corrupt.code, 1);
  t.equal(corrupt.stdout, '');
  t.match(corrupt.stderr, new RegExp(`^switchyard: cannot read ${logFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: [^\n]+\n$`), corrupt.stderr);

  writeFileSync(logFile, '');
  const configFile = path.join(gw.dataDir, 'config.json');
  rmSync(configFile);
  mkdirSync(configFile);
  const dir = await cli(args(gw.dataDir, keyId));
  t.equal(dir.code, 1);
  t.match(dir.stderr, /^switchyard: cannot read [^\n]*config\.json: [^\n]+\n$/, dir.stderr);
  t.notMatch(dir.stderr, /missing config\.json/);

  rmSync(configFile, { recursive: true });
  const missing = await cli(args(gw.dataDir, keyId));
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^switchyard: no switchyard data in [^\n]* \(missing config\.json\)\n$/);
});

t.test('--url keeps the path prefix of the base URL and refuses an answer that is not the envelope', async (t) => {
  const seen: { path: string | undefined; authorization: string | undefined }[] = [];
  let answer = '{"code":0,"message":"ok","data":{"routable":true,"request":{},"access_key":{},"candidates":[]}}';
  const server = createServer((req: IncomingMessage, res) => {
    seen.push({ path: req.url, authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const remote = (url: string) => cli(['--protocol', 'x-completions', '--model', 'm', '--access-key', '1', '--json', '--url', url], { AUTH_KEY });

  t.equal((await remote(`${origin}/gw/`)).code, 0);
  t.equal((await remote(`${origin}/gw`)).code, 0);
  t.equal((await remote(origin)).code, 0);
  t.same(
    seen.map((s) => s.path),
    ['/gw/api/route/inspect', '/gw/api/route/inspect', '/api/route/inspect'],
  );
  t.equal(seen[0]!.authorization, `Bearer ${AUTH_KEY}`);

  answer = '{}';
  const odd = await remote(`${origin}/gw/`);
  t.equal(odd.code, 1);
  t.match(odd.stderr, /^switchyard: [^\n]* did not answer as a switchyard management API\n$/);
});

t.test('a malformed access key id or an unknown protocol is a usage error (exit 2) before anything is read', async (t) => {
  const missing = path.join(tmpdir(), 'switchyard-no-such-data-dir');
  for (const [what, args] of [
    ['a hexadecimal id', ['--protocol', 'x-completions', '--model', 'm', '--access-key', '0x1', '--data', missing]],
    ['an id of 0', ['--protocol', 'x-completions', '--model', 'm', '--access-key', '0', '--data', missing]],
    ['an unknown protocol', ['--protocol', 'bogus', '--model', 'm', '--access-key', '1', '--data', missing]],
  ] as const) {
    const result = await cli([...args]);
    t.equal(result.code, 2, what);
    t.match(result.stderr, what === 'an unknown protocol' ? /--protocol must be one of .*x-completions/ : /--access-key must be an AccessKey id/, what);
    t.notMatch(result.stderr, /no switchyard data/, `${what}: refused before the data directory is read`);
  }
});
