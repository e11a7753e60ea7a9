import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import type { Test } from 'tap';

/**
 * Until the returned function is called (or the test ends), writes of a JSON store's temporary
 * file (`.<file>.tmp`, config.json's by default) fail as on a full disk: the file is created,
 * nothing fits in it, ENOSPC. steno (lowdb's writer) imports writeFile from node:fs/promises;
 * syncBuiltinESMExports hands it the replacement.
 */
export function fillTheDisk(t: Test, file = 'config.json'): () => void {
  const original = fsPromises.writeFile;
  const restore = () => {
    fsPromises.writeFile = original;
    syncBuiltinESMExports();
  };
  fsPromises.writeFile = (async (target: Parameters<typeof original>[0], data: Parameters<typeof original>[1], options?: Parameters<typeof original>[2]) => {
    if (!String(target).endsWith(`.${file}.tmp`)) return original(target, data, options);
    await original(target, '');
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  }) as typeof original;
  syncBuiltinESMExports();
  t.teardown(restore);
  return restore;
}
