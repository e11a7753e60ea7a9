import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../clock.ts';
import type { ConfigData } from './config-document.ts';
import type { WriteStamp } from './json-document.ts';

const currentKey = new AsyncLocalStorage<string>();

/** Runs `operation` with `key` as the Idempotency-Key its configuration writes are noted under. */
export function underIdempotencyKey<R>(key: string, operation: () => Promise<R>): Promise<R> {
  return currentKey.run(key, operation);
}

/** The config document's stamp: a write made under a key notes the key (once) in the same write. */
export function journalStamp(clock: Clock): WriteStamp<ConfigData> {
  return () => {
    const key = currentKey.getStore();
    if (key === undefined) return undefined;
    return (draft) => {
      const journal = (draft.idempotency_journal ??= []);
      if (!journal.some((note) => note.key === key)) journal.push({ key, at: clock() });
    };
  };
}
