import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { call, type CallResult } from './support/http-client.ts';
import { tempDataDir } from './support/gateway.ts';

// The real process killed with SIGKILL while creates are in flight, then every create retried
// with its own Idempotency-Key (spec section 4 rule 1): no create may be applied twice.

interface Attempt {
  key: string;
  name: string;
  answer?: CallResult;
}

/** The server writes config.json before it listens and replaces it by rename, so a read always sees a whole file. */
function namesOnDisk(dataDir: string): string[] {
  return (JSON.parse(readFileSync(path.join(dataDir, 'config.json'), 'utf8')) as { access_keys: Array<{ name: string }> }).access_keys.map((k) => k.name);
}

t.test('SIGKILL during concurrent creates: each retry replays, runs once, or is refused as lost, never a second AccessKey', async (t) => {
  const dataDir = tempDataDir(t);
  const first = spawnServe(['--port', '0', '--data', dataDir]);
  t.teardown(() => first.kill('SIGKILL'));
  const url = await first.url;
  const token = readFileSync(path.join(dataDir, 'auth_key'), 'utf8').trim();
  const create = (a: Attempt, base: string) =>
    call(base, 'POST', '/api/access-keys', { token, body: { name: a.name, protocols: ['x-completions'] }, headers: { 'Idempotency-Key': a.key } });

  const attempts: Attempt[] = [];
  let killed = false;
  const workers = Array.from({ length: 8 }, async () => {
    while (!killed) {
      const a: Attempt = { key: randomUUID(), name: `k-${attempts.length}` };
      attempts.push(a);
      a.answer = await create(a, url).catch(() => undefined);
    }
  });
  // Killed once config.json holds creates that were not answered: the window between a change and its record.
  while (namesOnDisk(dataDir).filter((n) => attempts.some((a) => a.name === n && a.answer === undefined)).length < 3) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  first.kill('SIGKILL');
  killed = true;
  await first.exit;
  await Promise.all(workers);

  const second = spawnServe(['--port', '0', '--data', dataDir]);
  t.teardown(() => second.kill('SIGKILL'));
  const url2 = await second.url;
  const before = new Set(namesOnDisk(dataDir));
  let lost = 0;
  for (const a of attempts) {
    const retry = await create(a, url2);
    if (retry.headers['idempotency-replayed'] === 'true') {
      t.equal(retry.status, 201, `${a.name}: a replay of the stored result`);
    } else if (retry.status === 409) {
      lost++;
      t.equal(retry.json.code, 'IDEMPOTENCY_OUTCOME_LOST', `${a.name}: refused`);
      t.ok(before.has(a.name), `${a.name}: refused only when it was applied`);
    } else {
      t.equal(retry.status, 201, `${a.name}: runs now`);
      t.notOk(before.has(a.name), `${a.name}: runs only when it was not applied`);
    }
  }
  const listed = (await call(url2, 'GET', '/api/access-keys', { token })).json.data as Array<{ name: string }>;
  t.equal(listed.length, attempts.length, 'one AccessKey per attempt');
  t.equal(new Set(listed.map((k) => k.name)).size, listed.length, 'no name twice');
  t.comment(`${attempts.length} attempts, ${lost} applied with their result lost`);
});
