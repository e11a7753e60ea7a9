import type { ConfigData } from './config-document.ts';
import { revisionOf } from './credential-revision.ts';

/**
 * Ends the cooldowns of the credentials whose upstream address or proxy just changed (`moved`):
 * a cooldown for failing at the old address, or through the old proxy, says nothing of the new
 * one, and the new revision drops such verdicts still on their way. A disable by a 401/403
 * stays: a new address does not make a wrong key right.
 */
export function endAddressCooldowns(d: ConfigData, moved: (c: ConfigData['credentials'][number]) => boolean, now: string): void {
  for (const c of d.credentials) {
    if (!moved(c)) continue;
    c.cooldown_until = null;
    c.revision = revisionOf(c) + 1;
    c.updated_at = now;
  }
}
