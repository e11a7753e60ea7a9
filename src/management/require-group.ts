import { notFound } from '../http/api-error.ts';
import type { GroupStore } from '../store/config-store.ts';
import type { GroupRecord } from '../store/records.ts';
import type { ManagementContext } from './context.ts';
import { idParam } from './params.ts';

/** The group with this id, or the management plane's not-found error naming it. */
export async function requireGroup(groups: Pick<GroupStore, 'get'>, id: number): Promise<GroupRecord> {
  const group = await groups.get(id);
  if (!group) throw notFound('group', id);
  return group;
}

/** The group a route's `:group_id` names, or not-found. */
export function requireGroupInPath(ctx: ManagementContext, groups: Pick<GroupStore, 'get'>): Promise<GroupRecord> {
  return requireGroup(groups, idParam(ctx, 'group_id', 'group'));
}
