import type { RouteFeatures } from '../engine/index.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { planCandidates, type Candidate } from './plan-candidates.ts';

/** A request's candidates as planCandidates gives them, and the included ones among them. */
export interface RoutePlan {
  readonly candidates: readonly Candidate[];
  readonly included: readonly Candidate[];
}

/** Models kept per AccessKey and operation; a key that asks for more distinct ones starts over. */
const PLANS_PER_KEY = 256;

/**
 * Route plans of one configuration snapshot, per AccessKey, operation, model and route
 * features: the engine's answers and the Groups' order are the same for every such request, so
 * they are worked out once per snapshot instead of once per request. Plans are shared between
 * requests and must not be changed.
 */
export class RoutePlans {
  #groups: ReadonlyMap<string, readonly GroupRecord[]> | undefined;
  /** AccessKey, then operation, then model, then route features. */
  #byKey = new WeakMap<AccessKeyRecord, Map<string, Map<string, Map<number | string, RoutePlan>>>>();

  /** `groupsByModel` is the snapshot's (a new snapshot has a new one, which empties the cache). */
  plan(groupsByModel: ReadonlyMap<string, readonly GroupRecord[]>, allGroups: readonly GroupRecord[], key: AccessKeyRecord, protocol: string, operation: string, model: string | undefined, features: RouteFeatures): RoutePlan {
    if (groupsByModel !== this.#groups) {
      this.#groups = groupsByModel;
      this.#byKey = new WeakMap();
    }
    let byOperation = this.#byKey.get(key);
    if (byOperation === undefined) this.#byKey.set(key, (byOperation = new Map()));
    let byModel = byOperation.get(operation);
    if (byModel === undefined) byOperation.set(operation, (byModel = new Map()));
    const modelKey = model ?? '';
    let byFeatures = byModel.get(modelKey);
    if (byFeatures === undefined) {
      if (byModel.size >= PLANS_PER_KEY) byModel.clear();
      byModel.set(modelKey, (byFeatures = new Map()));
    }
    const id = featuresId(features);
    let plan = byFeatures.get(id);
    if (plan === undefined) {
      const groups = model === undefined ? allGroups : (groupsByModel.get(model) ?? []);
      const candidates = planCandidates({ protocol, operation, model, key, groups, features });
      plan = { candidates, included: candidates.filter((c) => c.included) };
      byFeatures.set(id, plan);
    }
    return plan;
  }
}

/** The features as a map key: a number for the common ones (stream, previous response), text when others are set. */
function featuresId(f: RouteFeatures): number | string {
  const flags = (f.stream === true ? 1 : 0) | (f.previous_response === true ? 2 : 0);
  if (f.image_count === undefined && f.input_kind === undefined && f.output_format === undefined && f.sub_operation === undefined) return flags;
  return `${flags}|${f.image_count ?? ''}|${f.input_kind ?? ''}|${f.output_format ?? ''}|${f.sub_operation ?? ''}`;
}
