import type { StoredCredential } from './config-document.ts';

/** Credentials stored before revisions existed are at revision 0. */
export function revisionOf(c: StoredCredential): number {
  return c.revision ?? 0;
}
