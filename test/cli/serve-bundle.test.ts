import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { bundleServer } from '../../build/bundle.mjs';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { call } from '../management/support/http-client.ts';
import { tempDataDir } from '../management/support/gateway.ts';
import { copyRepo } from '../helpers/repo-copy.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const AUTH_KEY = 'bundle-test-auth-key-0123456789abcdef';

interface Serving {
  url: string;
  /** The exit code, once the process has exited. */
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
  stdout(): string;
  stderr(): string;
}

/** Starts `command` (which runs `serve --port 0`) and waits for the URL it prints. */
async function startServing(t: Test, command: string, args: string[]): Promise<Serving> {
  const env: NodeJS.ProcessEnv = { ...process.env, AUTH_KEY };
  // No TypeScript loader in the child; tap adds back only its own process-info hook.
  delete env['NODE_OPTIONS'];
  // Its own process group, so that the teardown also reaches what npm started.
  const child = spawn(command, args, { cwd: ROOT, env, detached: true });
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /switchyard (http:\/\/\S+) /.exec(stdout);
      if (m?.[1]) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`${command} exited with ${code}: ${stderr}`)));
  });
  return { url, exited, kill: (signal) => child.kill(signal), stdout: () => stdout, stderr: () => stderr };
}

/**
 * `npm start` serves the CLI bundled into dist/ (build/build-dist.ts). This builds the same
 * bundle into a folder of its own (inside the checkout, where node_modules resolve), runs it
 * with plain node, without the TypeScript loader, and checks what would break in a bundle:
 * the version read from package.json, the log writer's worker found next to the bundle, and a
 * clean stop.
 */
t.test('the bundled CLI serves the management and data planes, logs through its worker and stops cleanly', async (t) => {
  mkdirSync(path.join(ROOT, 'dist'), { recursive: true });
  const outdir = mkdtempSync(path.join(ROOT, 'dist', 'test-'));
  t.teardown(() => rmSync(outdir, { recursive: true, force: true }));
  const bundle = await bundleServer(new URL('../../src/cli/main.ts', import.meta.url), outdir, 'switchyard');

  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}');
  });
  t.teardown(() => upstream.close());

  const dataDir = tempDataDir(t);
  const child = await startServing(t, process.execPath, [bundle, 'serve', '--port', '0', '--data', dataDir]);
  const { url } = child;

  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const system = await call(url, 'GET', '/api/system', { token: AUTH_KEY });
  t.equal(system.status, 200);
  t.equal(system.json.data.version, pkg.version, 'the version package.json names');

  const create = (p: string, body: unknown) => call(url, 'POST', p, { token: AUTH_KEY, body, headers: { 'Idempotency-Key': randomUUID() } });
  const group = (await create('/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat' }] })).json.data;
  t.equal((await create(`/api/groups/${group.id}/credentials/import`, { credentials: 'sk-bundle-upstream-0001' })).status, 200);
  const key = (await create('/api/access-keys', { name: 'k', protocols: ['x-completions'] })).json.data;

  const answer = await call(url, 'POST', '/v1/chat/completions', { token: key.value, body: { model: 'chat', messages: [{ role: 'user', content: 'hi' }] } });
  t.equal(answer.status, 200);
  t.equal(upstream.requests.length, 1);
  const logs = await call(url, 'GET', '/api/logs', { token: AUTH_KEY });
  t.same(
    logs.json.data.items.map((i: { status: number; external_model: string; usage: { input_tokens: number; output_tokens: number } }) => [i.status, i.external_model, i.usage.input_tokens, i.usage.output_tokens]),
    [[200, 'chat', 7, 3]],
    'the request was logged by the bundled log writer',
  );

  child.kill('SIGTERM');
  t.equal(await child.exited, 0, 'a clean exit');
  t.match(child.stdout(), /stopped/);
  t.notMatch(child.stderr(), /Error|Warning/);
});

t.test('npm start builds the bundle, serves from it, and a SIGTERM to npm stops the gateway cleanly', async (t) => {
  const dataDir = tempDataDir(t);
  const npm = await startServing(t, 'npm', ['start', '--', '--port', '0', '--data', dataDir]);
  const { url } = npm;
  t.match(npm.stderr(), /built .*dist\/switchyard\.mjs/);
  t.match(npm.stdout(), /node dist\/switchyard\.mjs serve/, 'served from the bundle');
  t.equal((await call(url, 'GET', '/api/health', { token: AUTH_KEY })).status, 200);

  // npm passes the signal to its script's process: the gateway itself, not a shell around it.
  npm.kill('SIGTERM');
  t.equal(await npm.exited, 0);
  t.match(npm.stdout(), /SIGTERM received/);
  t.match(npm.stdout(), /switchyard: stopped/);
  await t.rejects(call(url, 'GET', '/api/health', { token: AUTH_KEY }), 'nothing listens any more');
});

t.test('the switchyard bin serves from a bundle it builds into dist/, and a SIGTERM to npm run switchyard stops it cleanly', async (t) => {
  const built = path.join(ROOT, 'dist', 'switchyard.mjs');
  rmSync(built, { force: true });
  const dataDir = tempDataDir(t);
  const npm = await startServing(t, 'npm', ['run', '-s', 'switchyard', '--', 'serve', '--port', '0', '--data', dataDir]);
  t.ok(existsSync(built), 'the bin built dist/switchyard.mjs before serving');
  t.equal((await call(npm.url, 'GET', '/api/health', { token: AUTH_KEY })).status, 200);

  npm.kill('SIGTERM');
  t.equal(await npm.exited, 0);
  t.match(npm.stdout(), /switchyard: stopped/);
  t.notMatch(npm.stderr(), /Error|Warning/);
});

t.test('where dist/ cannot be written, the switchyard bin says so and serves from the sources', async (t) => {
  const copy = copyRepo();
  t.teardown(copy.remove);
  for (const part of ['bin', 'build']) cpSync(path.join(ROOT, part), path.join(copy.dir, part), { recursive: true });
  // A file where the folder would go: no folder can be made there, whoever runs the bin (root too).
  writeFileSync(path.join(copy.dir, 'dist'), 'not a folder\n');
  const dataDir = tempDataDir(t);
  const served = await startServing(t, process.execPath, [path.join(copy.dir, 'bin', 'switchyard.js'), 'serve', '--port', '0', '--data', dataDir]);
  t.match(served.stderr(), /^switchyard: dist\/ is not writable \(.+\); serving from the sources/m);
  t.equal((await call(served.url, 'GET', '/api/health', { token: AUTH_KEY })).status, 200);
  t.equal(readFileSync(path.join(copy.dir, 'dist'), 'utf8'), 'not a folder\n', 'dist left as it was');

  served.kill('SIGTERM');
  t.equal(await served.exited, 0);
  t.match(served.stdout(), /switchyard: stopped/);
});
