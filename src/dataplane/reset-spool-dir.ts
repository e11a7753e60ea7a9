import { mkdir, rm } from 'node:fs/promises';

/**
 * Empties the directory large request bodies are spooled to, creating it (owner only) if
 * needed: a file left there belongs to a request of an earlier run that ended with the process.
 */
export async function resetSpoolDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
}
