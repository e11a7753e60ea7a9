import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadAuthKey } from '../../src/server/auth-key.ts';
import { SecretBox } from '../../src/store/lowdb/secret-box.ts';
import { tempDataDir } from '../management/support/gateway.ts';

const STARTS = 8;

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
