import type { CredentialView, GroupRecord } from '../store/records.ts';

/** The upstream's model ids in its order; `truncated` when the upstream had more models than were listed (page or total caps). */
export interface DiscoveredModels {
  models: string[];
  truncated: boolean;
  /**
   * The collection each id was listed under and stripped of (generate style's `models/`): a
   * Group's upstream given with it (`models/m-a`) names the listed `m-a`, as the data plane calls both alike.
   */
  collection?: string;
}

/** How long discovery waits on the upstream, from the settings current when it starts. */
export interface DiscoveryTimeouts {
  /** Time each list call has to its response headers (`request_timeout_seconds`). */
  headersMs: number;
  /** Longest silence inside a list call's answer (`stream_idle_timeout_seconds`). */
  bodyIdleMs: number;
  /** Time for the whole discovery, all pages (`request_timeout_seconds`). */
  totalMs: number;
}

/** Lists upstream models with one credential of a Group; provided by the adapters. */
export interface ModelDiscovery {
  /** `proxy` is the managed proxy that applies (credential, then Group, then global), if any. */
  list(input: { group: GroupRecord; credential: CredentialView; values: Record<string, string>; proxy: string | null; timeouts: DiscoveryTimeouts }): Promise<DiscoveredModels>;
}

/**
 * A discovery that failed at the upstream; `upstreamStatus` when it answered with an error
 * status. The message is the gateway's own words (never the upstream's), shown as `detail`.
 */
export class DiscoveryFailed extends Error {
  constructor(
    message: string,
    readonly upstreamStatus?: number,
  ) {
    super(message);
    this.name = 'DiscoveryFailed';
  }
}

/**
 * Why a provider cannot list with this Group or credential: the configuration, not the
 * upstream. `credential_needs_flow`: a kind whose token comes from an authorization flow, which
 * this provider does not run.
 */
type DiscoveryRefusalReason = 'upstream_base_url_missing' | 'credential_secret_missing' | 'credential_needs_flow';

export class DiscoveryRefused extends Error {
  constructor(readonly reason: DiscoveryRefusalReason) {
    super(reason);
    this.name = 'DiscoveryRefused';
  }
}
