import { chmod, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Creates the directory large request bodies are spooled to, readable by its owner only, and
 * removes the spool files an earlier run left there (a request that ended with the process).
 * Only those: any other file there is not the gateway's to delete.
 */
export async function resetSpoolDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const left = (await readdir(dir)).filter((name) => name.startsWith('switchyard-body-') && name.endsWith('.json'));
  await Promise.all(left.map((name) => rm(path.join(dir, name), { force: true })));
}
