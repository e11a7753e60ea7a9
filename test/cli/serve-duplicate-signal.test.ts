import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { completeChat } from '../helpers/complete-chat.ts';
import { spawnServe, type ServeProcess } from '../helpers/spawn-serve.ts';
import { call } from '../management/support/http-client.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const AUTH_KEY = 'duplicate-signal-test-auth-key-0123456789';

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
