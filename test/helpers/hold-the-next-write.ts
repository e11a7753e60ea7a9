import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import type { Test } from 'tap';

/**
 * Holds the next write of config.json's temporary file until the returned function is called;
 * `onHeld` is called once that write is waiting.
 */
export function holdTheNextWrite(t: Test, onHeld: () => void = () => {}): () => void {
  const original = fsPromises.writeFile;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const restore = () => {
    fsPromises.writeFile = original;
    syncBuiltinESMExports();
  };
  fsPromises.writeFile = (async (target: Parameters<typeof original>[0], data: Parameters<typeof original>[1], options?: Parameters<typeof original>[2]) => {
    if (String(target).endsWith('.config.json.tmp')) {
      restore();
      onHeld();
      await released;
    }
    return original(target, data, options);
  }) as typeof original;
  syncBuiltinESMExports();
  t.teardown(restore);
  return release;
}
