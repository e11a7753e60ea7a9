import { mkdir } from 'node:fs/promises';
import { setTimeout } from 'node:timers/promises';
import path from 'node:path';
import { createFileOnce } from '../store/create-file-once.ts';
import { readFileIfPresent, removeFileIfPresent } from '../store/file-if-present.ts';
import { DataDirInUseError } from './data-dir-in-use-error.ts';

const LOCK_FILE = 'switchyard.lock';

const UNREADABLE_TRIES = 5;

export interface DataDirLock {
  /** Removes the lock file, if it is still ours. Safe to call more than once. */
  release(): Promise<void>;
}

/**
 * Lock files this process holds (and takeover guards it holds): a lock naming our own pid is
 * in use only when it is one of these (a second server in this process); otherwise it was left
 * by an earlier process that happened to have our pid (a container's pid 1, say).
 */
const heldHere = new Set<string>();

/**
 * Holds `dataDir` for one server: creates `<dataDir>/switchyard.lock` exclusively with our pid,
 * taking over a lock whose process is gone (killed with -9, say). Throws DataDirInUseError
 * when a running process holds it. Servers that start together on a stale lock end with
 * exactly one holder: the lock appears with its pid already written (a link to a file written
 * first), and a stale lock is removed only under a second lock, `switchyard.lock.takeover`,
 * after reading again that it is still the stale one.
 */
export function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = path.resolve(dataDir, LOCK_FILE);
  const taken = (lockingHere.get(file) ?? Promise.resolve()).then(
    () => takeLock(dataDir, file),
    () => takeLock(dataDir, file),
  );
  const settled = taken.then(forget, forget);
  function forget(): void {
    if (lockingHere.get(file) === settled) lockingHere.delete(file);
  }
  lockingHere.set(file, settled);
  return taken;
}

/**
 * The pid of a running process that holds `dataDir` (a server), or undefined: none, or a lock
 * this user cannot read (another user's server). Takes nothing: for commands that only read.
 */
export async function runningHolder(dataDir: string): Promise<number | undefined> {
  const file = path.resolve(dataDir, LOCK_FILE);
  const holder = await readHolder(file).catch(() => undefined);
  return holder !== undefined && isRunning(holder, file) ? holder : undefined;
}

/**
 * Starts in this process on the same lock, in turn: the lock file is there with our pid a turn
 * of the event loop before heldHere names it, and another start reading it then would take it
 * for one left by an earlier process with our pid, remove it, and make a second holder.
 */
const lockingHere = new Map<string, Promise<void>>();

async function takeLock(dataDir: string, file: string): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const guard = `${file}.takeover`;
  // Bounded: a takeover by another server takes a few file operations.
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await createLock(file)) {
      heldHere.add(file);
      return { release: () => release(file) };
    }
    const holder = await readHolder(file);
    if (holder !== undefined && isRunning(holder, file)) throw new DataDirInUseError(dataDir, holder, file);
    // Empty or unreadable: maybe one being written where no hard link could make it at once;
    // only one that stays so is a crash's leftover.
    if (holder === undefined && attempt < UNREADABLE_TRIES) {
      await setTimeout(10);
      continue;
    }
    if (await createLock(guard)) {
      heldHere.add(guard);
      try {
        if ((await readHolder(file)) === holder) await removeFileIfPresent(file);
      } finally {
        heldHere.delete(guard);
        await removeFileIfPresent(guard);
      }
      continue;
    }
    const taking = await readHolder(guard);
    // Gone already (its takeover just ended): try again. Removing it on that reading could
    // remove the guard another server made since.
    if (taking === undefined) continue;
    // A server that died during its takeover left the guard behind.
    if (!isRunning(taking, guard)) await removeFileIfPresent(guard);
    else await setTimeout(10);
  }
  throw new DataDirInUseError(dataDir, (await readHolder(file)) ?? 0, file);
}

/** Makes `file` with our pid in it in one step; false when it is there already. */
function createLock(file: string): Promise<boolean> {
  return createFileOnce(file, `${process.pid}\n`);
}

async function release(file: string): Promise<void> {
  if (!heldHere.delete(file)) return;
  // Only our own lock: never remove one a later server took over.
  if ((await readHolder(file)) === process.pid) await removeFileIfPresent(file);
}

/** The pid in the lock file; undefined when it is gone or unreadable (a crash while writing it). */
async function readHolder(file: string): Promise<number | undefined> {
  const pid = Number((await readFileIfPresent(file))?.trim());
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
