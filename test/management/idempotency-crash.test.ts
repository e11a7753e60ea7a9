import { randomUUID } from 'node:crypto';
import fsPromises from 'node:fs/promises';
import { copyFileSync, readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import t, { type Test } from 'tap';
import { startGateway, tempDataDir, type Gateway } from './support/gateway.ts';

// A crash between a management change and the record of its result (spec section 4 rule 1:
// the client retries with the same key when the outcome is unknown): the retry must never
// apply the change a second time.

const body = { name: 'crash-probe', protocols: ['x-completions'] };

interface Trap {
  /** Resolves when the trapped write is reached (held, or refused). */
  reached: Promise<void>;
  /** Lets held writes go on, and puts writeFile back. */
  release(): void;
}

/**
 * Traps the writes of `target`'s temporary file in `dir` (steno imports writeFile from node:fs/promises;
 * syncBuiltinESMExports hands it the replacement), once `after`'s has been written when given.
 * `hold` keeps them waiting, as a process killed at that point would; `refuse` fails them as a
 * full disk does.
 */
function trapWrites(t: Test, dir: string, target: string, how: 'hold' | 'refuse', after?: string): Trap {
  const original = fsPromises.writeFile;
  let armed = after === undefined;
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const held: Array<() => void> = [];
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    fsPromises.writeFile = original;
    syncBuiltinESMExports();
    for (const go of held) go();
  };
  fsPromises.writeFile = (async (file: Parameters<typeof original>[0], data: Parameters<typeof original>[1], options?: Parameters<typeof original>[2]) => {
    const name = path.basename(String(file));
    if (path.dirname(String(file)) !== dir) return original(file, data, options);
    if (name === `.${after}.tmp`) armed = true;
    if (!armed || name !== `.${target}.tmp`) return original(file, data, options);
    reach();
    if (how === 'refuse') throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
    await new Promise<void>((resolve) => held.push(resolve));
    return original(file, data, options);
  }) as typeof original;
  syncBuiltinESMExports();
  t.teardown(release);
  return { reached, release };
}

/** What a crash leaves: the files as they are on disk now, under a new server (the held one keeps the lock). */
async function restartFromDisk(t: Test, gw: Gateway): Promise<Gateway> {
  const dir = tempDataDir(t);
  for (const file of ['config.json', 'idempotency.json', 'audit.json', 'secret.key']) {
    copyFileSync(path.join(gw.dataDir, file), path.join(dir, file));
  }
  return startGateway(t, { dataDir: dir });
}

async function keysNamed(gw: Gateway, name: string): Promise<number> {
  const listed = (await gw.api('GET', '/api/access-keys')).json.data as Array<{ name: string }>;
  return listed.filter((k) => k.name === name).length;
}

t.test('a crash after the change was written and before its result was stored: the retry is refused, not applied again', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const trap = trapWrites(t, gw.dataDir, 'idempotency.json', 'hold', 'config.json');
  const unanswered = gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  await trap.reached;

  const after = await restartFromDisk(t, gw);
  t.equal(await keysNamed(after, body.name), 1, 'the change is on disk');
  const retry = await after.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(retry.status, 409);
  t.equal(retry.json.code, 'IDEMPOTENCY_OUTCOME_LOST');
  t.match(retry.json.data, { attempted_at: String, applied_at: String });
  t.notOk(retry.headers['idempotency-replayed'], 'not presented as a replay');
  t.equal(await keysNamed(after, body.name), 1, 'not created a second time');
  await after.restart();
  const again = await after.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(again.json.code, 'IDEMPOTENCY_OUTCOME_LOST', 'the same answer after another restart');
  const other = await after.api('POST', '/api/access-keys', { body: { ...body, name: 'other' }, headers: { 'Idempotency-Key': key } });
  t.equal(other.json.code, 'IDEMPOTENCY_KEY_REUSED', 'a different request under the key is still 409 REUSED');
  t.equal(await keysNamed(after, body.name), 1);
  t.notMatch(JSON.stringify((await after.api('GET', '/api/access-keys')).json), key, 'the key noted in the configuration is not shown');

  trap.release();
  t.equal((await unanswered).status, 201, 'the held server finishes once let go');
});

t.test('a crash after the pending record and before the change: the retry runs the operation once', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const trap = trapWrites(t, gw.dataDir, 'config.json', 'hold', 'idempotency.json');
  const unanswered = gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  await trap.reached;

  const after = await restartFromDisk(t, gw);
  t.equal(await keysNamed(after, body.name), 0, 'nothing applied before the crash');
  const retry = await after.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(retry.status, 201, 'runs now');
  t.notOk(retry.headers['idempotency-replayed']);
  t.match(retry.json.data.value, /^sy-/, 'the one response that carries the value');
  const replay = await after.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(replay.headers['idempotency-replayed'], 'true', 'and later retries replay it');
  t.notOk('value' in replay.json.data);
  t.equal(await keysNamed(after, body.name), 1);

  trap.release();
  await unanswered;
});

t.test('a result that could not be saved after the change was: the retry is refused, not applied again', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const trap = trapWrites(t, gw.dataDir, 'idempotency.json', 'refuse', 'config.json');
  const first = await gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 503, 'the failed save of the result');
  trap.release();
  const retry = await gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(retry.status, 409);
  t.equal(retry.json.code, 'IDEMPOTENCY_OUTCOME_LOST');
  t.equal(await keysNamed(gw, body.name), 1, 'one AccessKey');

  gw.clock.advance(90 * 86_400_000);
  await gw.create('/api/groups', { name: 'later', channel: 'ch02' });
  t.notMatch(readFileSync(path.join(gw.dataDir, 'config.json'), 'utf8'), key, 'after 90 days the configuration no longer notes the key');
  t.notMatch(readFileSync(path.join(gw.dataDir, 'idempotency.json'), 'utf8'), key, 'nor is its pending record kept');
});
