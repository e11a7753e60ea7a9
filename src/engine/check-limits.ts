import type { CellLimit, RefuseCondition } from '../generated/index.ts';
import type { RouteFeatures } from './route-features.ts';

export interface LimitBreach {
  note: number;
  condition: RefuseCondition;
  value: unknown;
}

/** The first refuse_when condition that the request's features meet, if any. */
export function findLimitBreach(limits: readonly CellLimit[], mode: string, features: RouteFeatures): LimitBreach | undefined {
  for (const limit of limits) {
    if (limit.mode !== mode) continue;
    for (const condition of limit.refuse_when) {
      const value = features[condition.feature];
      if (value !== undefined && meets(condition, value)) return { note: limit.note, condition, value };
    }
  }
  return undefined;
}

function meets(c: RefuseCondition, value: string | number | boolean): boolean {
  if (c.equals !== undefined) return value === c.equals;
  if (c.not_equals !== undefined) return value !== c.not_equals;
  if (c.greater_than !== undefined) return typeof value === 'number' && value > c.greater_than;
  return false;
}

/**
 * What a request met a condition by, where the feature's name would misname it: a
 * `conversation` continues stored state as well as a `previous_response_id` does.
 */
const MET_WHEN_TRUE: Partial<Record<RefuseCondition['feature'], string>> = { previous_response: 'a previous_response_id or conversation' };

export function describeCondition(c: RefuseCondition): string {
  const met = c.equals === true ? MET_WHEN_TRUE[c.feature] : undefined;
  if (met !== undefined) return met;
  if (c.equals !== undefined) return `${c.feature} = ${String(c.equals)}`;
  if (c.not_equals !== undefined) return `${c.feature} other than ${String(c.not_equals)}`;
  return `${c.feature} > ${String(c.greater_than)}`;
}
