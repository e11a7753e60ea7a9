import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadAuthKey } from '../../src/server/auth-key.ts';
import { SecretBox } from '../../src/store/lowdb/secret-box.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const STARTS = 8;

/** Leftovers of a start killed while making `file`: temporary files beside it, under other names. */
function leaveStrays(file: string): void {
  for (const stray of [`${file}.tmp`, `${file}.${process.pid}.000000000000`, `${file}.1.abcdefabcdef`]) writeFileSync(stray, 'half-', { mode: 0o600 });
}

t.test('first starts racing for auth_key end with one key, which the file holds', async (t) => {
  const dir = tempDataDir(t);
  const sources = await Promise.all(Array.from({ length: STARTS }, () => loadAuthKey(dir, undefined)));
  const keys = new Set(sources.map((s) => s.authKey));
  t.equal(keys.size, 1, 'every start has the same key');
  t.equal(readFileSync(path.join(dir, 'auth_key'), 'utf8'), `${sources[0]!.authKey}\n`);
  t.equal(sources.filter((s) => s.generatedAt !== undefined).length, 1, 'one start made it and names the file');
  t.equal(statSync(path.join(dir, 'auth_key')).mode & 0o777, 0o600);
  t.same(readdirSync(dir), ['auth_key'], 'no temporary file left');
});

t.test('first starts racing for secret.key end with one key: what one encrypts, all decrypt', async (t) => {
  const dir = tempDataDir(t);
  const file = path.join(dir, 'secret.key');
  const boxes = await Promise.all(Array.from({ length: STARTS }, () => SecretBox.open(file, true)));
  const sealed = boxes[0]!.encrypt('sk-upstream', 'credential:1');
  for (const box of boxes) t.equal(box.decrypt(sealed, 'credential:1'), 'sk-upstream');
  t.equal(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length, 32);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.same(readdirSync(dir), ['secret.key'], 'no temporary file left');
});

t.test('what a start killed while making the key files leaves does not stop the next one', async (t) => {
  const dir = tempDataDir(t);
  leaveStrays(path.join(dir, 'auth_key'));
  leaveStrays(path.join(dir, 'secret.key'));
  const first = await loadAuthKey(dir, undefined);
  t.ok(first.generatedAt, 'a key is made');
  t.equal((await loadAuthKey(dir, undefined)).authKey, first.authKey, 'and read back');
  const box = await SecretBox.open(path.join(dir, 'secret.key'), true);
  const sealed = box.encrypt('sk-upstream', 'credential:1');
  t.equal((await SecretBox.open(path.join(dir, 'secret.key'), false)).decrypt(sealed, 'credential:1'), 'sk-upstream');
});
