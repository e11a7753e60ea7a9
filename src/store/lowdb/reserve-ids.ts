import type { NamedIds } from '../logs/log-store.ts';
import type { ConfigData } from './config-document.ts';
import type { JsonDocument } from './json-document.ts';

const KINDS = ['group', 'credential', 'access_key'] as const;

/**
 * Raises next_id past the ids `named` (the request logs'), writing only when one is not past
 * them already: a config.json restored from an older backup, or started empty, would otherwise
 * give them to new records.
 */
export async function reserveIds(doc: JsonDocument<ConfigData>, named: NamedIds): Promise<void> {
  if (KINDS.every((kind) => doc.data.next_id[kind] > named[kind])) return;
  await doc.mutate((d) => {
    for (const kind of KINDS) d.next_id[kind] = Math.max(d.next_id[kind], named[kind] + 1);
  });
}
