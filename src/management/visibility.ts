import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';

/** Whether an AccessKey sees this Group at all (its `groups` list; null means every Group). */
export function groupVisibleTo(key: AccessKeyRecord, group: GroupRecord): boolean {
  return key.groups === null || key.groups.includes(group.id);
}

/** Whether an AccessKey may use this external model name (its `models` list; null means all). */
export function modelVisibleTo(key: AccessKeyRecord, external: string): boolean {
  return key.models === null || key.models.includes(external);
}

/** External model names an AccessKey can use: enabled, visible Groups, filtered by its model list. */
export function visibleModelNames(key: AccessKeyRecord, groups: readonly GroupRecord[]): string[] {
  const names = new Set<string>();
  for (const g of groups) {
    if (!g.enabled || !groupVisibleTo(key, g)) continue;
    for (const m of g.models) if (modelVisibleTo(key, m.external)) names.add(m.external);
  }
  return [...names].sort();
}
