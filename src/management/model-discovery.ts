import type { CredentialView, GroupRecord } from '../store/records.ts';

/** Lists upstream models with one credential of a Group; provided by the adapters. */
export interface ModelDiscovery {
  /** `proxy` is the managed proxy that applies (credential, then Group, then global), if any. */
  list(input: { group: GroupRecord; credential: CredentialView; values: Record<string, string>; proxy: string | null }): Promise<string[]>;
}
