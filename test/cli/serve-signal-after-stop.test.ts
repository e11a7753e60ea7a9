import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { REPO_ROOT } from '../helpers/repo-copy.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const LEAKED_HANDLE = pathToFileURL(path.join(REPO_ROOT, 'test/fixtures/leaked-handle.mjs')).href;

t.test('once stopped, a process that a leftover handle keeps alive ends by the next signal', async (t) => {
  const child = spawnServe(['--port', '0', '--data', tempDataDir(t)], { AUTH_KEY: 'signal-after-stop-auth-key-0123456789', NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${LEAKED_HANDLE}` });
  t.teardown(() => child.kill('SIGKILL'));
  await child.url;
  child.kill('SIGTERM');
  await child.printed(/switchyard: stopped\n/);
  // The stores are closed: from here on a signal gets node's default action.
  child.kill('SIGTERM');
  // Bounded: a process that swallows the signal runs on.
  const ended = await Promise.race([child.exit, sleep(20_000, undefined, { ref: false })]);
  t.same(ended && { code: ended.code, signal: ended.signal }, { code: null, signal: 'SIGTERM' }, 'killed by the signal');
});
