import type { CredentialView } from '../store/records.ts';

/** Credential counts by state, as a Group's listing and the home page show them. */
export function countsByState(credentials: readonly CredentialView[]) {
  const count = (state: string) => credentials.filter((c) => c.state === state).length;
  return { total: credentials.length, active: count('active'), disabled: count('disabled'), cooldown: count('cooldown') };
}
