import type { RouteFeatures } from '../engine/index.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { planCandidates, type Candidate } from './plan-candidates.ts';

/** A request's candidates as planCandidates gives them, and the included ones among them. */
export interface RoutePlan {
  readonly candidates: readonly Candidate[];
  readonly included: readonly Candidate[];
}

/** Plans kept per AccessKey; a key that asks for more distinct models starts over. */
const PLANS_PER_KEY = 256;

/**
 * Route plans of one configuration snapshot, per AccessKey, operation, model and route
 * features: the engine's answers and the Groups' order are the same for every such request, so
 * they are worked out once per snapshot instead of once per request. Plans are shared between
 * requests and must not be changed.
 */
export class RoutePlans {
  #groups: ReadonlyMap<string, readonly GroupRecord[]> | undefined;
  #byKey = new WeakMap<AccessKeyRecord, Map<string, RoutePlan>>();

  /** `groupsByModel` is the snapshot's (a new snapshot has a new one, which empties the cache). */
  plan(groupsByModel: ReadonlyMap<string, readonly GroupRecord[]>, allGroups: readonly GroupRecord[], key: AccessKeyRecord, protocol: string, operation: string, model: string | undefined, features: RouteFeatures): RoutePlan {
    if (groupsByModel !== this.#groups) {
      this.#groups = groupsByModel;
      this.#byKey = new WeakMap();
    }
    let plans = this.#byKey.get(key);
    if (plans === undefined) this.#byKey.set(key, (plans = new Map()));
    const id = `${operation}\n${model ?? ''}\n${featuresId(features)}`;
    let plan = plans.get(id);
    if (plan === undefined) {
      const groups = model === undefined ? allGroups : (groupsByModel.get(model) ?? []);
      const candidates = planCandidates({ protocol, operation, model, key, groups, features });
      plan = { candidates, included: candidates.filter((c) => c.included) };
      if (plans.size >= PLANS_PER_KEY) plans.clear();
      plans.set(id, plan);
    }
    return plan;
  }
}

function featuresId(f: RouteFeatures): string {
  return `${f.stream === true ? 1 : 0}${f.previous_response === true ? 1 : 0}|${f.image_count ?? ''}|${f.input_kind ?? ''}|${f.output_format ?? ''}|${f.sub_operation ?? ''}`;
}
