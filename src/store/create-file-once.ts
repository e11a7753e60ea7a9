import { randomBytes } from 'node:crypto';
import { link, open, writeFile } from 'node:fs/promises';
import { removeFileIfPresent } from './file-if-present.ts';

/**
 * Creates `file` with `content` (owner-only) in one step, never overwriting: false when it is
 * there already. The content goes to a temporary file beside it first, written and synced,
 * then hard-linked into place, so that `file` never exists empty or half-written, even when
 * the process is killed on the way (a leftover is the temporary file, under another name).
 * Where no hard link can be made, it is created exclusively and then written.
 */
export async function createFileOnce(file: string, content: string): Promise<boolean> {
  const written = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const handle = await open(written, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(content);
      // The mode given to open() is narrowed by the umask.
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(written, file);
    return true;
  } catch (err) {
    const { code } = err as NodeJS.ErrnoException;
    if (code === 'EEXIST') return false;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') return createExclusively(file, content);
    throw err;
  } finally {
    await removeFileIfPresent(written);
  }
}

async function createExclusively(file: string, content: string): Promise<boolean> {
  try {
    await writeFile(file, content, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  }
}
