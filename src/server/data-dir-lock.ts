import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DataDirInUseError } from './data-dir-in-use-error.ts';

export const LOCK_FILE = 'switchyard.lock';

export interface DataDirLock {
  /** Removes the lock file, if it is still ours. Safe to call more than once. */
  release(): Promise<void>;
}

/**
 * Lock files this process holds: a lock naming our own pid is in use only when it is one of
 * these (a second server in this process); otherwise it was left by an earlier process that
 * happened to have our pid (a container's pid 1, say).
 */
const heldHere = new Set<string>();

/**
 * Holds `dataDir` for one server: creates `<dataDir>/switchyard.lock` exclusively with our pid,
 * taking over a lock whose process is gone (killed with -9, say). Throws DataDirInUseError
 * when a running process holds it.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, LOCK_FILE);
  // Bounded: each round either creates the lock, refuses, or removes one stale lock.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      heldHere.add(file);
      return { release: () => release(file) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await readHolder(file);
    if (holder !== undefined && isRunning(holder, file)) throw new DataDirInUseError(dataDir, holder, file);
    await unlink(file).catch(ignoreMissing);
  }
  throw new DataDirInUseError(dataDir, (await readHolder(file)) ?? 0, file);
}

async function release(file: string): Promise<void> {
  if (!heldHere.delete(file)) return;
  // Only our own lock: never remove one a later server took over.
  if ((await readHolder(file)) === process.pid) await unlink(file).catch(ignoreMissing);
}

/** The pid in the lock file; undefined when it is gone or unreadable (a crash while writing it). */
async function readHolder(file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function isRunning(pid: number, file: string): boolean {
  if (pid === process.pid) return heldHere.has(file);
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, under another user.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
