import type { CredentialView } from '../store/records.ts';
import type { ConfigSnapshot, Snapshot } from './config-snapshot.ts';
import type { CredentialAccess } from './credential-pool.ts';
import type { SessionTicker } from './session-ticker.ts';

/** The credential a session was opened with, in its Group, and the values (secret, address) it used. */
export interface SessionCredential {
  groupId: number;
  credential: CredentialView;
  access: CredentialAccess;
  /** The base URL the session was opened at: the credential's own, or else its Group's. */
  address: string;
  /** Its Group's versionless_api then: part of the upstream URL as the address is. */
  versionless: boolean;
}

export interface SessionCredentialFollower {
  /** The session ended: no more checks, nor a close. */
  stop(): void;
}

/**
 * The session follows its credential and that credential's Group: at each of the ticker's
 * turns (only a changed configuration costs more than a comparison), once the configuration
 * changed, both are looked up in the current snapshot, and the session is ended
 * (`endWithdrawn`, `credential_withdrawn`), at most once, when the credential was deleted,
 * disabled (by the operator or a verdict) or given other values than the session uses (its
 * secret rotated, its address changed, or its Group's when it has none of its own, or its Group's
 * versionless_api), or its Group was deleted or disabled. A cooldown, or an edit of its weight, name or proxy (a new revision,
 * the same values), leaves it running.
 */
export function followSessionCredential(
  deps: { snapshot: ConfigSnapshot; ticker: SessionTicker; accessOf(view: CredentialView): Promise<CredentialAccess | undefined> },
  used: SessionCredential,
  endWithdrawn: (code: 'credential_withdrawn') => void,
): SessionCredentialFollower {
  const { snapshot } = deps;
  let stopped = false;
  // What was last found unchanged: the snapshot, and the Group's credential list in it (a cooldown replaces it).
  let checkedSnap: Snapshot | undefined;
  let checkedList: readonly CredentialView[] | undefined;
  const end = () => {
    if (stopped) return;
    stop();
    endWithdrawn('credential_withdrawn');
  };
  const check = async (): Promise<void> => {
    const snap = snapshot.fresh() ?? (await snapshot.current());
    const list = snap.credentialsByGroup.get(used.groupId);
    if (stopped || (snap === checkedSnap && list === checkedList)) return;
    const group = snap.groups.find((g) => g.id === used.groupId);
    const view = list?.find((c) => c.id === used.credential.id);
    if (group?.enabled !== true || view === undefined || !view.enabled) return end();
    // The pool keeps the values of the credential's current revision: unsealed again only after an edit.
    const access = await deps.accessOf(view);
    if (stopped) return;
    if (access === undefined || access.secret !== used.access.secret || (access.baseUrl ?? group.base_url ?? '') !== used.address || (group.versionless_api === true) !== used.versionless) return end();
    checkedSnap = snap;
    checkedList = list;
  };
  // A store that cannot be read now is read again at the next turn.
  const unwatch = deps.ticker.add(() => void check().catch(() => undefined));
  const stop = () => {
    stopped = true;
    unwatch();
  };
  return { stop };
}
