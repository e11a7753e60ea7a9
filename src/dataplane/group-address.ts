import type { CredentialAccess } from './credential-pool.ts';

/**
 * The credential's requests go to its Group's base_url: it names no address of its own, or the
 * same one (the management plane fills a location field from the Group's when it is left out).
 * A connection that never opened there, or a certificate refused there, is the Group's address
 * failing: the Group's other credentials there would meet the same.
 */
export function atGroupAddress(access: CredentialAccess, group: { readonly base_url: string | null }): boolean {
  return access.baseUrl === null || access.baseUrl === group.base_url;
}
