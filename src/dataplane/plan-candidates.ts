import { resolve, type Resolution, type RouteFeatures } from '../engine/index.ts';
import type { AccessKeyRecord, GroupModel, GroupRecord } from '../store/records.ts';
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
  const excluded = exclusion(group, key, model, resolution);
  if (excluded === undefined) candidate.included = true;
  else candidate.excluded_because = excluded;
  return candidate;
}

/** Why the Group is not a candidate, the first reason in this order; undefined when it is one. */
function exclusion(group: GroupRecord, key: AccessKeyRecord, model: string | undefined, resolution: Resolution): string | undefined {
  if (!groupVisibleTo(key, group)) return 'group_not_visible';
  if (model !== undefined && !modelVisibleTo(key, model)) return 'model_not_visible';
  if (!group.enabled) return 'group_disabled';
  return routeExclusion(resolution) ?? (group.base_url ? undefined : 'upstream_base_url_missing');
}

/** Why the engine's answer rules the route out, or undefined when the data plane carries it. */
function routeExclusion(resolution: Resolution): string | undefined {
  return resolution.ok ? unservedReason(resolution) : resolution.reason_code;
}

/**
 * Whether each route is carried, as anyIncluded has found: by protocol and operation, then
 * channel, then upstream model (undefined for an operation without one). Without features that
 * is all the engine's answer depends on.
 */
export type RouteMemo = Map<string, Map<string, Map<string | undefined, boolean>>>;

/**
 * Whether planCandidates(input) would include any Group, without its cost: it stops at the first
 * included Group, sorts nothing, and asks the engine once per route among the calls sharing
 * `memo`. A model list asks this per model and method over Groups that often share their models.
 */
export function anyIncluded(input: Omit<PlanInput, 'features'>, memo: RouteMemo): boolean {
  const { protocol, operation, model, key, groups } = input;
  if (model !== undefined && !modelVisibleTo(key, model)) return false;
  const opKey = `${protocol}\n${operation}`;
  let byChannel = memo.get(opKey);
  if (byChannel === undefined) memo.set(opKey, (byChannel = new Map()));
  for (const group of groups) {
    // The same checks as exclusion(), those that need no engine answer first.
    if (!group.enabled || !group.base_url || !groupVisibleTo(key, group)) continue;
    let upstream: string | undefined;
    if (model !== undefined) {
      upstream = upstreamNames(group.models).get(model);
      if (upstream === undefined) continue;
    }
    let byUpstream = byChannel.get(group.channel);
    if (byUpstream === undefined) byChannel.set(group.channel, (byUpstream = new Map()));
    let carried = byUpstream.get(upstream);
    if (carried === undefined) {
      const resolution = resolve({ protocol, operation, channel: group.channel, ...(upstream !== undefined ? { model: upstream } : {}) });
      byUpstream.set(upstream, (carried = routeExclusion(resolution) === undefined));
    }
    if (carried) return true;
  }
  return false;
}

// A Group's upstream name for each external one (the first mapping, as candidateFor finds it),
// built once per models list: a list asks it for many models of Groups serving many. Keyed by
// the array itself, which the store replaces, never edits (see visibility.ts).
const upstreamsByModels = new WeakMap<readonly GroupModel[], ReadonlyMap<string, string>>();

function upstreamNames(models: readonly GroupModel[]): ReadonlyMap<string, string> {
  let names = upstreamsByModels.get(models);
  if (names === undefined) {
    const built = new Map<string, string>();
    for (const m of models) if (!built.has(m.external)) built.set(m.external, m.upstream);
    upstreamsByModels.set(models, (names = built));
  }
  return names;
}

/**
 * Attempt order among the included candidates: by priority, and within one priority a weighted
 * random order so traffic spreads by weight (the first by weight, the rest by weight after it).
 * Fewer than two come back as given. Linear in the candidates but for the sort within a priority.
 */
export function attemptOrder(included: readonly Candidate[], random: () => number = Math.random): readonly Candidate[] {
  if (included.length < 2) return included;
  const out = byPriority(included);
  for (let start = 0; start < out.length; ) {
    const priority = out[start]!.group.priority;
    let end = start + 1;
    while (end < out.length && out[end]!.group.priority === priority) end++;
    if (end - start > 1) weightedOrder(out, start, end, random);
    start = end;
  }
  return out;
}

/** A copy by priority, higher first (stable); the planner's order already is, so it is only checked. */
function byPriority(included: readonly Candidate[]): Candidate[] {
  const out = included.slice();
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.group.priority > out[i - 1]!.group.priority) return out.sort((a, b) => b.group.priority - a.group.priority);
  }
  return out;
}

/**
 * Orders `out[start, end)` as successive weighted draws without replacement would. Equal weights
 * make every order as likely: a shuffle. Otherwise one sort (Efraimidis–Spirakis): each item's
 * key is u^(1/weight) for a uniform u, highest first, compared as its log. An item of weight 0
 * or less is never drawn while one with weight is left: it comes last, in the order given.
 */
function weightedOrder(out: Candidate[], start: number, end: number, random: () => number): void {
  const first = out[start]!.group.weight;
  let same = first > 0;
  for (let i = start + 1; same && i < end; i++) same = out[i]!.group.weight === first;
  if (same) {
    for (let i = start; i < end - 1; i++) {
      const j = i + Math.floor(random() * (end - i));
      const picked = out[j]!;
      out[j] = out[i]!;
      out[i] = picked;
    }
    return;
  }
  const tier = out.slice(start, end).map((candidate) => {
    const weight = candidate.group.weight;
    // 1 - random() is in (0, 1]: its log is finite, so only weightless items share -Infinity.
    return { candidate, key: weight > 0 ? Math.log(1 - random()) / weight : -Infinity };
  });
  tier.sort((a, b) => (a.key > b.key ? -1 : a.key < b.key ? 1 : 0));
  for (let i = 0; i < tier.length; i++) out[start + i] = tier[i]!.candidate;
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
