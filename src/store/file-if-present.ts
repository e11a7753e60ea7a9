import { readFile, unlink } from 'node:fs/promises';

/** The text of `file`; undefined when there is no such file. */
export async function readFileIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return undefined;
  }
}

/** Removes `file`; one already gone is not an error. */
export async function removeFileIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
