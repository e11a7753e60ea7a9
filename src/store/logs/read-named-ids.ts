import type { NamedIds } from './log-store.ts';
import type { PrepareStatement } from './prepared-statements.ts';
import { DIM_GROUP, DIM_KEY } from './log-schema.ts';

/**
 * The highest ids the store names. Records name their AccessKey and Group in their batch's
 * dimensions (cast: Groups are text there); the usage retention kept names AccessKeys; stored
 * objects name their creator, Group and credential. A credential named only by records is not
 * read (that would decode every batch): such a record may show a new credential's id.
 */
export function readNamedIds(prepare: PrepareStatement): NamedIds {
  const highest = (sql: string, ...params: number[]): number => (prepare(sql).pluck().get(...params) as number | null) ?? 0;
  const dim = (kind: number) => highest('SELECT MAX(CAST(value AS INTEGER)) FROM log_batch_dims WHERE kind = ?', kind);
  return {
    access_key: Math.max(dim(DIM_KEY), highest('SELECT MAX(access_key_id) FROM pruned_usage_by_hour'), highest('SELECT MAX(created_by) FROM stored_objects')),
    group: Math.max(dim(DIM_GROUP), highest('SELECT MAX(group_id) FROM stored_objects')),
    credential: highest('SELECT MAX(credential_id) FROM stored_objects'),
  };
}
