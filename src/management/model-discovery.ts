import type { CredentialView, GroupRecord } from '../store/records.ts';

/** The upstream's model ids in its order; `truncated` when it still had pages past the page cap. */
export interface DiscoveredModels {
  models: string[];
  truncated: boolean;
}

/** Lists upstream models with one credential of a Group; provided by the adapters. */
export interface ModelDiscovery {
  /** `proxy` is the managed proxy that applies (credential, then Group, then global), if any. */
  list(input: { group: GroupRecord; credential: CredentialView; values: Record<string, string>; proxy: string | null }): Promise<DiscoveredModels>;
}

/** A discovery that failed at the upstream; `upstreamStatus` when it answered with an error status. */
export class DiscoveryFailed extends Error {
  constructor(
    message: string,
    readonly upstreamStatus?: number,
  ) {
    super(message);
    this.name = 'DiscoveryFailed';
  }
}
