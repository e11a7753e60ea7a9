import type { CredentialView, GroupRecord } from '../store/records.ts';

/** Lists upstream models with one credential of a Group; provided by the adapters. */
export interface ModelDiscovery {
  list(input: { group: GroupRecord; credential: CredentialView; values: Record<string, string> }): Promise<string[]>;
}
