import { accessKeyExpired } from '../../auth/access-key-expiry.ts';
import { CredentialPool } from '../../dataplane/credential-pool.ts';
import { planCandidates, refusalFor } from '../../dataplane/plan-candidates.ts';
import type { Resolution } from '../../engine/index.ts';
import { PROTOCOLS, type ProtocolId } from '../../generated/index.ts';
import { notFound, validationFailed } from '../../http/api-error.ts';
import type { AccessKeyStore, CredentialStore, GroupStore } from '../../store/config-store.ts';
import type { LogReader } from '../../store/log-store.ts';
import type { CredentialView } from '../../store/records.ts';
import { firstReachedLine, quotaReachedDetail, type QuotaOf, type QuotaStatus } from '../quota.ts';

export interface InspectInput {
  protocol: string;
  external_model: string;
  access_key_id: number;
}

export interface InspectSources {
  groups: Pick<GroupStore, 'list'>;
  credentials: CredentialStore;
  accessKeys: Pick<AccessKeyStore, 'get'>;
  /**
   * A key's quota: the running data plane's meter (its requests in flight included), or offline
   * the usage store's; without one, quotas are not evaluated.
   */
  quotaOf: QuotaOf | undefined;
  now: number;
}

export interface CredentialAvailability {
  id: number;
  name: string | null;
  kind: string;
  state: CredentialView['state'];
  available: boolean;
  /** Why the credential is not used; null when available. */
  reason_code: 'credential_disabled' | 'credential_cooldown' | 'credential_not_usable' | null;
  disabled_reason: string | null;
  cooldown_until: string | null;
}

export interface InspectedCandidate {
  group_id: number;
  group_name: string;
  channel: string;
  enabled: boolean;
  priority: number;
  weight: number;
  upstream_model: string | null;
  route: Resolution;
  included: boolean;
  /** Why the Group is not used; null when included. */
  reason_code: string | null;
  /** 0 for the highest included priority, 1 for the next, ...; null when not included. */
  tier: number | null;
  /** Share of its tier's traffic by weight; null when not included. */
  share_in_tier: number | null;
  credentials: CredentialAvailability[];
}

export interface RouteInspection {
  routable: boolean;
  reason_code: string | null;
  detail: string | null;
  request: { protocol: string; operation: string; external_model: string; access_key_id: number };
  access_key: { id: number; name: string; enabled: boolean; expired: boolean; protocol_allowed: boolean; quota: QuotaStatus | null | 'not_evaluated' };
  candidates: InspectedCandidate[];
}

/**
 * Route inspection (spec section 4, decisions section 1) for the protocol's primary
 * operation. It uses the data plane's own candidate planning and credential pool, so that it
 * answers what a real request would get; it reads configuration only and sends nothing upstream.
 */
export async function inspectRoute(src: InspectSources, input: InspectInput): Promise<RouteInspection> {
  if (!Object.hasOwn(PROTOCOLS, input.protocol)) throw validationFailed('protocol', 'invalid_value');
  const protocol = PROTOCOLS[input.protocol as ProtocolId];
  const key = await src.accessKeys.get(input.access_key_id);
  if (!key) throw notFound('access_key', input.access_key_id);

  const expired = accessKeyExpired(key, src.now);
  const protocolAllowed = key.protocols.includes(protocol.id);
  const quota = key.quota === null ? null : src.quotaOf ? await src.quotaOf(key, src.now) : 'not_evaluated';

  const planned = planCandidates({ protocol: protocol.id, operation: protocol.primary_operation, model: input.external_model, key, groups: await src.groups.list() });
  const pool = new CredentialPool(src.credentials);
  const candidates: InspectedCandidate[] = [];
  /** Included Groups none of whose credentials is usable, with the credentials they hold. */
  const uncredentialed = new Map<number, { group: (typeof planned)[number]['group']; listed: readonly CredentialView[] }>();
  // Every credential in one read: one per candidate filtered them all each time (a model most Groups serve: Groups × credentials).
  const byGroup = planned.length === 0 ? new Map<number, CredentialView[]>() : await src.credentials.listAll();
  for (const c of planned) {
    const listed = byGroup.get(c.group.id) ?? [];
    const usable = new Set(pool.servable(c.group, listed, src.now).map((u) => u.id));
    const credentials = listed.map((v) => availability(v, usable.has(v.id)));
    const reason = c.included ? (usable.size > 0 ? null : 'no_available_credential') : (c.excluded_because ?? null);
    if (reason === 'no_available_credential') uncredentialed.set(c.group.id, { group: c.group, listed });
    candidates.push({
      group_id: c.group.id,
      group_name: c.group.name,
      channel: c.group.channel,
      enabled: c.group.enabled,
      priority: c.group.priority,
      weight: c.group.weight,
      upstream_model: c.upstream_model,
      route: c.resolution,
      included: reason === null,
      reason_code: reason,
      tier: null,
      share_in_tier: null,
      credentials,
    });
  }
  assignTiers(candidates);

  const keyReason = !key.enabled
    ? 'access_key_disabled'
    : expired
      ? 'access_key_expired'
      : !protocolAllowed
        ? 'protocol_not_allowed'
        : quota !== 'not_evaluated' && quota?.exceeded
          ? 'quota_exceeded'
          : null;
  let reason: string | null = keyReason;
  // The data plane's words for the limit it refuses by (the first reached, as its meter finds it).
  const reached = reason === 'quota_exceeded' && quota !== null && quota !== 'not_evaluated' ? firstReachedLine(quota.lines) : undefined;
  let detail: string | null = reached ? quotaReachedDetail(reached) : null;
  if (reason === null && !candidates.some((c) => c.included)) {
    if (uncredentialed.size > 0) {
      reason = 'no_available_credential';
      // The data plane's own wording, so that inspection and a real request's refusal agree.
      const groups = [...uncredentialed.values()].map((u) => u.group);
      detail = pool.noCredentialDetail(groups, (id) => uncredentialed.get(id)?.listed ?? [], src.now);
    } else ({ code: reason, detail } = refusalFor(planned, input.external_model));
  }
  return {
    routable: reason === null,
    reason_code: reason,
    detail,
    request: { protocol: protocol.id, operation: protocol.primary_operation, external_model: input.external_model, access_key_id: key.id },
    access_key: { id: key.id, name: key.name, enabled: key.enabled, expired, protocol_allowed: protocolAllowed, quota },
    candidates,
  };
}

function availability(c: CredentialView, usable: boolean): CredentialAvailability {
  const reason = usable ? null : c.state === 'disabled' ? 'credential_disabled' : c.state === 'cooldown' ? 'credential_cooldown' : 'credential_not_usable';
  return { id: c.id, name: c.name, kind: c.kind, state: c.state, available: usable, reason_code: reason, disabled_reason: c.disabled_reason, cooldown_until: c.cooldown_until };
}

/** Included Groups are tried by priority (tiers) and share a tier by weight. */
function assignTiers(candidates: InspectedCandidate[]): void {
  const included = candidates.filter((c) => c.included);
  const priorities = [...new Set(included.map((c) => c.priority))].sort((a, b) => b - a);
  for (const c of included) {
    const tierWeight = included.filter((x) => x.priority === c.priority).reduce((sum, x) => sum + x.weight, 0);
    c.tier = priorities.indexOf(c.priority);
    c.share_in_tier = c.weight / tierWeight;
  }
}
