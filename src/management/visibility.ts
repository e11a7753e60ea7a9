import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';

// A key's `groups` and `models` lists as Sets, built once per list: a key may name thousands
// of models and a Group serve thousands, and a lookup per pair would make listing them
// quadratic. Keyed by the array itself: the store hands out a fresh clone of the record, its
// arrays included, on every read and every change, so an entry is never stale.
const groupSets = new WeakMap<readonly number[], ReadonlySet<number>>();
const modelSets = new WeakMap<readonly string[], ReadonlySet<string>>();

function setOf<T>(cache: WeakMap<readonly T[], ReadonlySet<T>>, list: readonly T[]): ReadonlySet<T> {
  let set = cache.get(list);
  if (!set) cache.set(list, (set = new Set(list)));
  return set;
}

/** Whether an AccessKey sees this Group at all (its `groups` list; null means every Group). */
export function groupVisibleTo(key: AccessKeyRecord, group: GroupRecord): boolean {
  return key.groups === null || setOf(groupSets, key.groups).has(group.id);
}

/** Whether an AccessKey may use this external model name (its `models` list; null means all). */
export function modelVisibleTo(key: AccessKeyRecord, external: string): boolean {
  return key.models === null || setOf(modelSets, key.models).has(external);
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

/**
 * The enabled Groups the AccessKey sees among those serving `external` (the configuration's
 * groups-by-model entry for it), or none when the key may not use the name: one name's
 * visibility without listing every model.
 */
export function groupsServingTo(key: AccessKeyRecord, external: string, serving: readonly GroupRecord[]): GroupRecord[] {
  return modelVisibleTo(key, external) ? serving.filter((g) => g.enabled && groupVisibleTo(key, g)) : [];
}
