import { resolve, type Resolution } from '../../engine/index.ts';
import { PROTOCOLS, type ProtocolId } from '../../generated/index.ts';
import { notFound, validationFailed } from '../../http/api-error.ts';
import type { AccessKeyStore, CredentialStore, GroupStore } from '../../store/config-store.ts';
import type { LogReader } from '../../store/log-store.ts';
import type { CredentialView } from '../../store/records.ts';
import { quotaStatus, type QuotaStatus } from '../quota.ts';
import { groupVisibleTo, modelVisibleTo } from '../visibility.ts';

export interface InspectInput {
  protocol: string;
  external_model: string;
  access_key_id: number;
}

export interface InspectSources {
  groups: Pick<GroupStore, 'listExposingModel'>;
  credentials: Pick<CredentialStore, 'list'>;
  accessKeys: Pick<AccessKeyStore, 'get'>;
  /** Without a usage store (offline inspection) quotas are not evaluated. */
  logs: LogReader | undefined;
  now: number;
}

export interface CredentialAvailability {
  id: number;
  name: string | null;
  kind: string;
  state: CredentialView['state'];
  available: boolean;
  reason_code: 'credential_disabled' | 'credential_cooldown' | null;
  disabled_reason: string | null;
  cooldown_until: string | null;
}

export interface Candidate {
  group_id: number;
  group_name: string;
  channel: string;
  enabled: boolean;
  priority: number;
  weight: number;
  upstream_model: string;
  visible: boolean;
  route: Resolution;
  included: boolean;
  /** Why the Group is not used; null when included. */
  reason_code: string | null;
  /** 0 for the highest priority tier that is included, 1 for the next, ... */
  tier: number | null;
  /** Share of the tier's traffic by weight. */
  share_in_tier: number | null;
  credentials: CredentialAvailability[];
}

export interface RouteInspection {
  routable: boolean;
  reason_code: string | null;
  request: { protocol: string; operation: string; external_model: string; access_key_id: number };
  access_key: { id: number; name: string; enabled: boolean; expired: boolean; protocol_allowed: boolean; quota: QuotaStatus | null | 'not_evaluated' };
  candidates: Candidate[];
}

// How far a candidate got; the furthest one names why the request as a whole is refused.
const STAGE: Record<string, number> = { model_not_visible: 0, group_disabled: 1, no_available_credential: 3 };
const ROUTE_STAGE = 2;

/**
 * Route inspection (spec section 4, decisions section 1): evaluates every Group that maps the
 * external model for this AccessKey and protocol, with the engine's answer for the protocol's
 * primary operation. Reads configuration only; nothing is sent upstream.
 */
export async function inspectRoute(src: InspectSources, input: InspectInput): Promise<RouteInspection> {
  if (!Object.hasOwn(PROTOCOLS, input.protocol)) throw validationFailed('protocol', 'invalid_value');
  const protocol = PROTOCOLS[input.protocol as ProtocolId];
  const key = await src.accessKeys.get(input.access_key_id);
  if (!key) throw notFound('access_key', input.access_key_id);

  const expired = key.expires_at !== null && Date.parse(key.expires_at) <= src.now;
  const protocolAllowed = key.protocols.includes(protocol.id);
  const quota = src.logs ? await quotaStatus(key, src.logs, src.now) : 'not_evaluated';

  const groups = (await src.groups.listExposingModel(input.external_model)).sort((a, b) => b.priority - a.priority || a.id - b.id);
  const candidates: Candidate[] = [];
  for (const g of groups) {
    const upstream = g.models.find((m) => m.external === input.external_model)?.upstream ?? input.external_model;
    const visible = groupVisibleTo(key, g) && modelVisibleTo(key, input.external_model);
    const route = resolve({ protocol: protocol.id, operation: protocol.primary_operation, channel: g.channel, model: upstream });
    const credentials = (await src.credentials.list(g.id)).map(availability);
    const reason = !visible
      ? 'model_not_visible'
      : !g.enabled
        ? 'group_disabled'
        : !route.ok
          ? route.reason_code
          : credentials.some((c) => c.available)
            ? null
            : 'no_available_credential';
    candidates.push({
      group_id: g.id,
      group_name: g.name,
      channel: g.channel,
      enabled: g.enabled,
      priority: g.priority,
      weight: g.weight,
      upstream_model: upstream,
      visible,
      route,
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
  const reason = keyReason ?? (candidates.some((c) => c.included) ? null : refusalOf(candidates));
  return {
    routable: reason === null,
    reason_code: reason,
    request: { protocol: protocol.id, operation: protocol.primary_operation, external_model: input.external_model, access_key_id: key.id },
    access_key: { id: key.id, name: key.name, enabled: key.enabled, expired, protocol_allowed: protocolAllowed, quota },
    candidates,
  };
}

function availability(c: CredentialView): CredentialAvailability {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    state: c.state,
    available: c.state === 'active',
    reason_code: c.state === 'disabled' ? 'credential_disabled' : c.state === 'cooldown' ? 'credential_cooldown' : null,
    disabled_reason: c.disabled_reason,
    cooldown_until: c.cooldown_until,
  };
}

/** Included Groups are tried by priority (tiers), and share a tier by weight. */
function assignTiers(candidates: Candidate[]): void {
  const included = candidates.filter((c) => c.included);
  const priorities = [...new Set(included.map((c) => c.priority))].sort((a, b) => b - a);
  for (const c of included) {
    const tierMembers = included.filter((x) => x.priority === c.priority);
    c.tier = priorities.indexOf(c.priority);
    c.share_in_tier = c.weight / tierMembers.reduce((sum, x) => sum + x.weight, 0);
  }
}

/** No Group is usable: the reason of the candidate that got furthest. A disabled Group does not serve its models. */
function refusalOf(candidates: Candidate[]): string {
  let best: { stage: number; reason: string } = { stage: -1, reason: 'model_not_visible' };
  for (const c of candidates) {
    const reason = c.reason_code ?? 'model_not_visible';
    const stage = STAGE[reason] ?? ROUTE_STAGE;
    if (stage > best.stage) best = { stage, reason: reason === 'group_disabled' ? 'model_not_visible' : reason };
  }
  return best.reason;
}
