import { CHANNELS } from '../generated/index.ts';
import type { FeatureName } from '../engine/index.ts';

/**
 * Every number the channel table's refuse_when conditions compare a feature with, ascending:
 * read once from the generated table, so a manifest's new threshold is seen without a list here.
 */
const THRESHOLDS: ReadonlyMap<FeatureName, readonly number[]> = (() => {
  const found = new Map<FeatureName, Set<number>>();
  for (const channel of Object.values(CHANNELS)) {
    for (const cell of Object.values(channel.cells)) {
      for (const limit of cell?.limits ?? []) {
        for (const condition of limit.refuse_when) {
          // Every number a condition holds, whatever its comparison is named.
          for (const value of Object.values(condition)) {
            if (typeof value !== 'number') continue;
            let set = found.get(condition.feature);
            if (set === undefined) found.set(condition.feature, (set = new Set()));
            set.add(value);
          }
        }
      }
    }
  }
  return new Map([...found].map(([feature, set]) => [feature, [...set].sort((a, b) => a - b)]));
})();

/**
 * Where `value` lies among the numbers the rules compare `feature` with: 2k when k of them are
 * below it and none equals it, 2k + 1 when it equals the next one. Values of one class meet
 * exactly the same conditions (any comparison with those numbers), so the rules cannot tell
 * them apart; there are at most twice as many classes as numbers, plus one.
 */
export function thresholdClass(feature: FeatureName, value: number): number {
  const thresholds = THRESHOLDS.get(feature);
  if (thresholds === undefined) return 0;
  let below = 0;
  while (below < thresholds.length && thresholds[below]! < value) below++;
  return 2 * below + (thresholds[below] === value ? 1 : 0);
}
