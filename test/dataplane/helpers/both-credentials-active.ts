import type { Test } from 'tap';
import type { Gateway } from './data-plane-harness.ts';

/** Both credentials of the Group are active: none was cooled down for a failure of the gateway's side. */
export async function bothCredentialsActive(t: Test, gw: Gateway, groupId: number): Promise<void> {
  const credentials = await gw.store.credentials.list(groupId);
  t.equal(credentials.length, 2);
  for (const c of credentials) {
    t.equal(c.state, 'active', `credential ${c.id} not cooled down`);
    t.equal(c.cooldown_until, null);
  }
}
