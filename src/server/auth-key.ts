import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const AUTH_KEY_FILE = 'auth_key';

/** The AUTH_KEY file exists but holds no key: the operator decides, the server does not overwrite it. */
export class AuthKeyFileError extends Error {
  constructor(readonly file: string, problem: string) {
    super(`${file} ${problem}`);
    this.name = 'AuthKeyFileError';
  }
}

export interface AuthKeySource {
  authKey: string;
  /** Set when the key was generated now: the file the operator finds it in. */
  generatedAt?: string;
}

/**
 * The AUTH_KEY: from the environment when set, otherwise from <data>/auth_key, generated
 * there (owner-only) on the first start.
 */
export async function loadAuthKey(dataDir: string, fromEnv: string | undefined): Promise<AuthKeySource> {
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { authKey: fromEnv.trim() };
  const file = path.join(dataDir, AUTH_KEY_FILE);
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    if (stored === '') throw new AuthKeyFileError(file, 'is empty; delete it to generate a new AUTH_KEY or write one into it');
    return { authKey: stored };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const authKey = `sy-admin-${randomBytes(32).toString('base64url')}`;
  await writeFile(file, `${authKey}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  return { authKey, generatedAt: file };
}
