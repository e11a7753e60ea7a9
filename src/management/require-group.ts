import { notFound } from '../http/api-error.ts';
import type { GroupStore } from '../store/config-store.ts';
import type { GroupRecord } from '../store/records.ts';

/** The group with this id, or the management plane's not-found error naming it. */
export async function requireGroup(groups: Pick<GroupStore, 'get'>, id: number): Promise<GroupRecord> {
  const group = await groups.get(id);
  if (!group) throw notFound('group', id);
  return group;
}
