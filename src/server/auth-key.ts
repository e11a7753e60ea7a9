import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createFileOnce } from '../store/create-file-once.ts';
import { readFileIfPresent } from '../store/file-if-present.ts';

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
  const stored = await readStored(file);
  if (stored !== undefined) return { authKey: stored };
  const authKey = `sy-admin-${randomBytes(32).toString('base64url')}`;
  if (await createFileOnce(file, `${authKey}\n`)) return { authKey, generatedAt: file };
  // Another start made it first: its key is the one.
  const made = await readStored(file);
  if (made === undefined) throw new AuthKeyFileError(file, 'vanished while it was being created');
  return { authKey: made };
}

/** The key in `file`; undefined when there is no file. */
async function readStored(file: string): Promise<string | undefined> {
  const text = await readFileIfPresent(file);
  if (text === undefined) return undefined;
  const stored = text.trim();
  if (stored === '') throw new AuthKeyFileError(file, 'is empty; delete it to generate a new AUTH_KEY or write one into it');
  return stored;
}
