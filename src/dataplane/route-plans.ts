import type { RouteFeatures } from '../engine/index.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { planCandidates, type Candidate } from './plan-candidates.ts';
import { thresholdClass } from './rule-thresholds.ts';

/** A request's candidates as planCandidates gives them, and the included ones among them. */
export interface RoutePlan {
  readonly candidates: readonly Candidate[];
  readonly included: readonly Candidate[];
}

/**
 * Plans kept per AccessKey, over all its operations, models and features; a key that needs
 * more starts over. Models are the client's text, so this is what bounds the cache.
 */
const PLANS_PER_KEY = 1024;

/** One AccessKey's plans: by operation, then model, then route features; and how many. */
interface KeyPlans {
  byOperation: Map<string, Map<string, Map<number | string, RoutePlan>>>;
  count: number;
}

/**
 * Route plans of one configuration snapshot, per AccessKey, operation, model and route
 * features: the engine's answers and the Groups' order are the same for every such request, so
 * they are worked out once per snapshot instead of once per request. Requests whose features
 * the rules cannot tell apart (`n` of 3 and of 3000 against a rule `image_count > 1`) share a
 * plan, so what a client sends adds no entries beyond those the rules distinguish. Plans are
 * shared between requests and must not be changed.
 */
export class RoutePlans {
  #groups: ReadonlyMap<string, readonly GroupRecord[]> | undefined;
  #byKey = new WeakMap<AccessKeyRecord, KeyPlans>();

  /** `groupsByModel` is the snapshot's (a new snapshot has a new one, which empties the cache). */
  plan(groupsByModel: ReadonlyMap<string, readonly GroupRecord[]>, allGroups: readonly GroupRecord[], key: AccessKeyRecord, protocol: string, operation: string, model: string | undefined, features: RouteFeatures): RoutePlan {
    if (groupsByModel !== this.#groups) {
      this.#groups = groupsByModel;
      this.#byKey = new WeakMap();
    }
    let keyPlans = this.#byKey.get(key);
    if (keyPlans === undefined) this.#byKey.set(key, (keyPlans = { byOperation: new Map(), count: 0 }));
    let byModel = keyPlans.byOperation.get(operation);
    if (byModel === undefined) keyPlans.byOperation.set(operation, (byModel = new Map()));
    const modelKey = model ?? '';
    let byFeatures = byModel.get(modelKey);
    if (byFeatures === undefined) byModel.set(modelKey, (byFeatures = new Map()));
    const id = featuresId(features);
    let plan = byFeatures.get(id);
    if (plan === undefined) {
      if (keyPlans.count >= PLANS_PER_KEY) {
        keyPlans.byOperation.clear();
        keyPlans.count = 0;
        keyPlans.byOperation.set(operation, (byModel = new Map()));
        byModel.set(modelKey, (byFeatures = new Map()));
      }
      const groups = model === undefined ? allGroups : (groupsByModel.get(model) ?? []);
      const candidates = planCandidates({ protocol, operation, model, key, groups, features });
      plan = { candidates, included: candidates.filter((c) => c.included) };
      byFeatures.set(id, plan);
      keyPlans.count++;
    }
    return plan;
  }

  /** How many plans are kept for `key` (for tests: the cache's size is bounded). */
  plansFor(key: AccessKeyRecord): number {
    return this.#byKey.get(key)?.count ?? 0;
  }
}

/**
 * The features as a map key: a number for the common ones (stream, previous response, background), text
 * when others are set. A number a client chooses stands as its class among the rules'
 * thresholds; the texts come from closed sets (requestFeatures maps what a client sends).
 */
function featuresId(f: RouteFeatures): number | string {
  const flags = (f.stream === true ? 1 : 0) | (f.previous_response === true ? 2 : 0) | (f.background === true ? 4 : 0);
  if (f.image_count === undefined && f.input_kind === undefined && f.output_format === undefined && f.sub_operation === undefined) return flags;
  const images = f.image_count === undefined ? '' : thresholdClass('image_count', f.image_count);
  return `${flags}|${images}|${f.input_kind ?? ''}|${f.output_format ?? ''}|${f.sub_operation ?? ''}`;
}
