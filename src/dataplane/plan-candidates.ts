import { resolve, type Resolution, type RouteFeatures } from '../engine/index.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { groupVisibleTo, modelVisibleTo } from '../management/visibility.ts';
import type { DataPlaneCode } from './data-plane-error.ts';
import { unservedReason } from './served-route.ts';

export interface Candidate {
  group: GroupRecord;
  /** The name sent upstream; null for operations that carry no model. */
  upstream_model: string | null;
  resolution: Resolution;
  included: boolean;
  /** Why the group is not a candidate (a reason code), when it is not. */
  excluded_because?: string;
  /** What the request asked of its route: to weigh the Group again as it is configured later. */
  request: RouteRequest;
}

/** A request as routing weighs it against each Group. */
export type RouteRequest = Omit<PlanInput, 'groups'>;

export interface PlanInput {
  protocol: string;
  operation: string;
  /** The model the client asked for; undefined for operations without one. */
  model: string | undefined;
  key: AccessKeyRecord;
  groups: readonly GroupRecord[];
  features?: RouteFeatures;
}

/**
 * Every Group that could serve the request, in routing order (priority, then weight), with
 * the engine's answer for each and whether it is included. Shared by the data plane and
 * route inspection so both always agree.
 */
export function planCandidates(input: PlanInput): Candidate[] {
  const { groups, ...request } = input;
  const out: Candidate[] = [];
  for (const group of groups) {
    const candidate = candidateFor(group, request);
    if (candidate) out.push(candidate);
  }
  return out.sort((a, b) => b.group.priority - a.group.priority || b.group.weight - a.group.weight || a.group.id - b.group.id);
}

/**
 * `routed` as its Group is configured now (base URL, proxy, model mapping), for an attempt
 * after another's wait; undefined when that Group no longer serves the request.
 */
function candidateNow(routed: Candidate, group: GroupRecord): Candidate | undefined {
  if (group === routed.group) return routed;
  const candidate = candidateFor(group, routed.request);
  return candidate?.included ? candidate : undefined;
}

/**
 * The credential and candidate an attempt uses: for the first, as routed; for a later one,
 * after an earlier attempt's wait, as configured now (`lookUp`), with the settings read then
 * (the global proxy as it is now). Undefined when the credential or its Group no longer serves
 * the request.
 */
export async function attemptTargetNow<C, S>(
  routed: Candidate,
  listed: C,
  first: boolean,
  lookUp: () => Promise<{ credential: C; group: GroupRecord; settings: S } | undefined>,
): Promise<{ candidate: Candidate; credential: C; settings: S | undefined } | undefined> {
  const configured = first ? { credential: listed, group: routed.group, settings: undefined } : await lookUp();
  const candidate = configured && candidateNow(routed, configured.group);
  return candidate && { candidate, credential: configured.credential, settings: configured.settings };
}

/** The Group as a candidate for the request; undefined when it does not map the request's model. */
function candidateFor(group: GroupRecord, request: RouteRequest): Candidate | undefined {
  const { key, model } = request;
  const mapping = model === undefined ? undefined : group.models.find((m) => m.external === model);
  if (model !== undefined && !mapping) return undefined;
  const upstream = mapping?.upstream ?? null;
  const resolution = resolve({
    protocol: request.protocol,
    operation: request.operation,
    channel: group.channel,
    ...(upstream !== null ? { model: upstream } : {}),
    ...(request.features ? { features: request.features } : {}),
  });
  const candidate: Candidate = { group, upstream_model: upstream, resolution, included: false, request };
  const unserved = unservedReason(resolution);
  if (!groupVisibleTo(key, group)) candidate.excluded_because = 'group_not_visible';
  else if (model !== undefined && !modelVisibleTo(key, model)) candidate.excluded_because = 'model_not_visible';
  else if (!group.enabled) candidate.excluded_because = 'group_disabled';
  else if (!resolution.ok) candidate.excluded_because = resolution.reason_code;
  else if (unserved) candidate.excluded_because = unserved;
  else if (!group.base_url) candidate.excluded_because = 'upstream_base_url_missing';
  else candidate.included = true;
  return candidate;
}

/**
 * Attempt order among the included candidates: by priority, and within one priority a weighted
 * random draw so traffic spreads by weight. Fewer than two come back as given.
 */
export function attemptOrder(included: readonly Candidate[], random: () => number = Math.random): readonly Candidate[] {
  if (included.length < 2) return included;
  const byPriority = new Map<number, Candidate[]>();
  for (const c of included) byPriority.set(c.group.priority, [...(byPriority.get(c.group.priority) ?? []), c]);
  return [...byPriority.keys()].sort((a, b) => b - a).flatMap((p) => weightedShuffle(byPriority.get(p)!, random));
}

function weightedShuffle(items: Candidate[], random: () => number): Candidate[] {
  const pool = [...items];
  const out: Candidate[] = [];
  while (pool.length) {
    const total = pool.reduce((s, c) => s + Math.max(c.group.weight, 0), 0);
    let pick = random() * total;
    let index = pool.findIndex((c) => (pick -= Math.max(c.group.weight, 0)) < 0);
    if (index < 0) index = 0;
    out.push(...pool.splice(index, 1));
  }
  return out;
}

/**
 * The refusal a request gets when no candidate is included: `model_not_visible` when no Group
 * serving the model is both visible to the key and enabled, else the reason of the first such
 * Group in priority order, which is named as `refusedBy`.
 */
export function refusalFor(candidates: readonly Candidate[], model: string | undefined): { code: DataPlaneCode; detail: string; refusedBy?: Candidate } {
  const visible = candidates.filter((c) => c.excluded_because !== 'group_not_visible' && c.excluded_because !== 'model_not_visible');
  const enabled = visible.filter((c) => c.excluded_because !== 'group_disabled');
  const first = enabled[0];
  if (!first) {
    const what = model === undefined ? 'this operation' : `model "${model}"`;
    return { code: 'model_not_visible', detail: visible.length ? `Every group serving ${what} is disabled.` : `No group serves ${what} to this key.` };
  }
  if (!first.resolution.ok) return { code: first.resolution.reason_code, detail: first.resolution.detail, refusedBy: first };
  return { code: first.excluded_because as DataPlaneCode, detail: `Group ${first.group.id} (${first.group.channel}).`, refusedBy: first };
}
