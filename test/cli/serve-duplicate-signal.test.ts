import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { completeChat } from '../helpers/complete-chat.ts';
import { spawnServe, type ServeProcess } from '../helpers/spawn-serve.ts';
import { call } from '../management/support/http-client.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const AUTH_KEY = 'duplicate-signal-test-auth-key-0123456789';
const LOCK_FILE = 'switchyard.lock';
const LOG_DB_FILE = 'logs.sqlite';

/** `switchyard serve` on a port of its own, killed at the end of `t`. */
function serve(t: Test, dataDir: string): ServeProcess {
  const child = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  return child;
}

/**
 * A gateway with one group whose upstream answers only when the test says so; resolves once
 * a chat completion has reached the upstream and waits there.
 */
async function serveWithRequestInFlight(t: Test) {
  let answer!: () => void;
  let arrived!: () => void;
  const upstreamReached = new Promise<void>((resolve) => (arrived = resolve));
  const upstream = await startUpstream(
    (_req, res) =>
      new Promise<void>((resolve) => {
        answer = () => {
          if (res.headersSent) return;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}');
          resolve();
        };
        arrived();
      }),
  );
  t.teardown(() => {
    answer?.();
    return upstream.close();
  });
  const child = serve(t, tempDataDir(t));
  const url = await child.url;
  const create = (p: string, body: unknown) => call(url, 'POST', p, { token: AUTH_KEY, body, headers: { 'Idempotency-Key': randomUUID() } });
  const group = (await create('/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat' }] })).json.data;
  t.equal((await create(`/api/groups/${group.id}/credentials/import`, { credentials: 'sk-duplicate-signal-0001' })).status, 200);
  const key = (await create('/api/access-keys', { name: 'k', protocols: ['x-completions'] })).json.data;
  const response = completeChat(url, key.value as string);
  await upstreamReached;
  return { child, response, answer: () => answer() };
}

t.test('the same SIGINT delivered twice (Ctrl-C on npm start) lets the request in flight finish and stops cleanly', async (t) => {
  const { child, response, answer } = await serveWithRequestInFlight(t);
  // The terminal's copy and npm's forwarded one.
  child.kill('SIGINT');
  await sleep(20);
  child.kill('SIGINT');
  await child.printed(/SIGINT received, finishing requests/);
  // Long enough for a cut, had the copy been taken for a second stop, to have answered 503.
  await sleep(300);
  answer();
  const answered = await response;
  t.equal(answered.status, 200, 'the request in flight is answered by its upstream');
  const { code, stdout } = await child.exit;
  t.equal(code, 0);
  t.match(stdout, /switchyard: stopped\n/);
  t.notMatch(stdout, /cut short|second signal/);
});

t.test('a second SIGINT well after the first cuts the requests in flight', async (t) => {
  const { child, response } = await serveWithRequestInFlight(t);
  child.kill('SIGINT');
  await child.printed(/SIGINT received, finishing requests/);
  await sleep(1500);
  child.kill('SIGINT');
  const answered = await response;
  t.equal(answered.status, 503);
  t.match(answered.body, /shutting_down/);
  const { code, stdout } = await child.exit;
  t.equal(code, 1, 'a shutdown cut short exits 1');
  t.match(stdout, /second signal, cutting the requests in flight/);
  t.match(stdout, /switchyard: stopped, requests in flight cut short\n/);
});

t.test('a SIGTERM sent the moment the ready line shows stops cleanly', async (t) => {
  // A few times: the moment right after the ready line is short.
  for (let run = 0; run < 5; run++) {
    const dataDir = tempDataDir(t);
    const child = serve(t, dataDir);
    void child.printed(/switchyard http:\/\//).then(() => child.kill('SIGTERM'));
    const { code, signal, stdout } = await child.exit;
    t.same({ code, signal }, { code: 0, signal: null }, `run ${run}: exits 0, not killed by the signal`);
    t.match(stdout, /switchyard: stopped\n/);
    t.notOk(existsSync(path.join(dataDir, LOCK_FILE)), 'the lock file is removed');
  }
});

t.test('a SIGTERM while starting ends the start as a stop', async (t) => {
  const dataDir = tempDataDir(t);
  const lock = path.join(dataDir, LOCK_FILE);
  // Another connection holds the log database, so the start is still starting when the
  // signal comes: without it a fast start may be listening already.
  const holder = new Database(path.join(dataDir, LOG_DB_FILE));
  holder.exec('BEGIN EXCLUSIVE');
  t.teardown(() => holder.close());
  const child = serve(t, dataDir);
  let exited = false;
  void child.exit.then(() => (exited = true));
  // The lock is the start's first step; the stores, the log writer and the listening come after.
  while (!existsSync(lock) && !exited) await sleep(1);
  child.kill('SIGTERM');
  await child.printed(/SIGTERM received while starting/);
  holder.exec('ROLLBACK');
  const { code, signal, stdout } = await child.exit;
  t.same({ code, signal }, { code: 0, signal: null }, 'exits 0, not killed by the signal');
  t.match(stdout, /SIGTERM received while starting/);
  t.notMatch(stdout, /switchyard http:/);
  t.match(stdout, /switchyard: stopped\n/);
  t.notOk(existsSync(lock), 'the lock file is removed');
});
