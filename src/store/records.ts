import type { ModelPrice } from '../usage/compute-cost.ts';

// Shapes of the configuration records as the rest of the program sees them. Secret values
// never appear here: they are read only through the explicit reveal methods of the stores.

export interface GroupModel {
  /** The model name clients ask for. */
  external: string;
  /** The name sent upstream. */
  upstream: string;
}

export interface GroupRecord {
  id: number;
  name: string;
  description: string;
  channel: string;
  /** Required when the channel's credential kinds require a base URL (ch31-ch35). */
  base_url: string | null;
  /**
   * The upstream's API paths have no version segment (`https://api.perplexity.ai/chat/completions`):
   * the operation's path is joined to the base URL (the Group's or a credential's own) without
   * its version segment, as an SDK joins its base_url. The store reads it as false in rows
   * stored before it existed; absent is false.
   */
  versionless_api?: boolean;
  /** Managed proxy at Group scope. */
  proxy_url: string | null;
  /** Higher priority groups are tried first. */
  priority: number;
  /** Share among groups of equal priority. */
  weight: number;
  enabled: boolean;
  models: GroupModel[];
  created_at: string;
  updated_at: string;
}

export type CredentialState = 'active' | 'disabled' | 'cooldown';

export interface CredentialRecord {
  id: number;
  group_id: number;
  kind: string;
  name: string | null;
  /** Non-secret fields of the credential kind (for example a region or a client id). */
  fields: Record<string, string>;
  /** Masked display of the secret fields. */
  masked: Record<string, string>;
  /** Operator switch; false together with disabled_reason when the data plane disabled it. */
  enabled: boolean;
  disabled_reason: string | null;
  cooldown_until: string | null;
  reset_credits_consumed: number;
  /** Share of the Group's traffic among its usable credentials (equal weights take turns). */
  weight: number;
  /** Managed proxy at credential scope. */
  proxy_url: string | null;
  created_at: string;
  updated_at: string;
  /**
   * Increases by one on every change to the credential (its secret, its state, its settings);
   * 0 for a credential stored before revisions existed. What the data plane learned about one
   * revision (a cached secret, an upstream's verdict) does not hold for another.
   */
  revision: number;
}

/** A credential as listed, with its state derived at the time of reading. */
export interface CredentialView extends CredentialRecord {
  state: CredentialState;
}

export interface QuotaLimits {
  requests?: number;
  tokens?: number;
  cost?: number;
}

export type QuotaPeriod = 'hour' | 'day' | 'week' | 'month';

export interface AccessKeyQuota {
  /** Lifetime limits of the key. */
  total?: QuotaLimits;
  /** Limits that reset at the start of each period (UTC). */
  per_period?: QuotaLimits & { period: QuotaPeriod };
}

export interface AccessKeyRecord {
  id: number;
  name: string;
  masked: string;
  /** Protocol ids (decisions.md section 2) the key may call. */
  protocols: string[];
  /** Visible Group ids; null means every Group. */
  groups: number[] | null;
  /** Visible external model names; null means every model of the visible Groups. */
  models: string[] | null;
  record_request_body: boolean;
  quota: AccessKeyQuota | null;
  expires_at: string | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  rotated_at: string | null;
}

export interface Settings {
  /** Proxies whose X-Forwarded-For is believed for lockout; IPs or CIDRs. */
  trusted_proxies: string[];
  /** Managed proxy at global scope. */
  proxy_url: string | null;
  /** Release feed for the update check of /api/system. */
  update_feed_url: string | null;
  /** Remote price list used by model-prices sync with source "url". */
  model_price_sync_url: string | null;
  /** Request logs older than this are deleted by the server's retention schedule. */
  log_retention_days: number;
  /** Time an upstream has to send its response headers. */
  request_timeout_seconds: number;
  /** An upstream stream silent this long is ended with the protocol's error event. */
  stream_idle_timeout_seconds: number;
  /** How long an idle client connection is kept open for its next request (node's keepAliveTimeout). */
  client_keep_alive_timeout_seconds: number;
  credential_cooldown_seconds: number;
  /** The cooldown of a 5xx or failed connection without the upstream's own hint: its health, back in seconds. */
  server_error_cooldown_seconds: number;
  max_attempts_per_request: number;
}

export type PriceSource = 'catalog' | 'sync' | 'manual';

/** The price shape the usage module computes cost with (USD per million tokens). */
export interface ModelPriceRecord extends ModelPrice {
  model: string;
  source: PriceSource;
  updated_at: string;
}

export type CredentialStageState = 'awaiting_authorization' | 'authorized' | 'imported' | 'failed' | 'expired' | 'cancelled';

export interface CredentialStageRecord {
  id: number;
  group_id: number;
  kind: string;
  flow: string;
  state: CredentialStageState;
  /** What the operator must do to authorize (URL, device code); filled by the flow provider. */
  authorization: Record<string, string> | null;
  error: string | null;
  credential_id: number | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
}

export type StoredResult =
  | { status: number; kind: 'success'; data?: unknown; headers?: Record<string, string> }
  | { status: number; kind: 'failure'; code: string; data?: unknown; headers?: Record<string, string> };

export interface IdempotencyRecord {
  key: string;
  /** Hash of method, route, path parameters and canonical body. */
  fingerprint: string;
  created_at: number;
  /** Dropped once expired; the record stays for a while to answer 410. */
  result: StoredResult | null;
  /** Written before the operation runs and replaced by the result: still there only after a crash (or a failed save of the result). */
  pending?: true;
}

export type AuditAction = 'credential.reveal' | 'credential.download' | 'access_key.reveal';

export interface AuditRecord {
  id: number;
  at: string;
  action: AuditAction;
  /** What was revealed, by id; never the value. */
  target: { group_id?: number; credential_ids?: number[]; access_key_id?: number };
  peer: string;
}
