import { groupVisibleTo, modelVisibleTo } from '../management/visibility.ts';
import type { AccessKeyRecord, GroupRecord, ModelPriceRecord } from '../store/records.ts';
import { computeCost, type SessionUsageAccumulator } from '../usage/index.ts';
import { checkAccessKey } from './check-access-key.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';
import { dataPlaneFailure } from './data-plane-error.ts';
import type { QuotaMeter } from './quota-meter.ts';
import type { SessionTicker } from './session-ticker.ts';

/** What a session's usage is read with and priced at. */
export interface SessionPricing {
  usage: SessionUsageAccumulator | undefined;
  price: ModelPriceRecord | undefined;
}

/** The AccessKey a session was admitted with, and what it is read again by. */
export interface AdmittedKey {
  key: AccessKeyRecord;
  presented: string;
  protocol: string;
  /** The external model the session was opened for, and the Group it was routed to: a key narrowed past either no longer sees the session's model. */
  model: string;
  group: GroupRecord;
  /** When the session was admitted: its record is dated then, and its per-period quota lines are judged in that period. */
  startedAt: number;
}

export interface SessionKeyFollower {
  /** Called as the session's usage grows. */
  onUsage(): void;
  /** The session ended: no more checks, nor a policy close. */
  stop(): void;
}

/**
 * The session follows its key: at each of the ticker's turns (only a changed configuration
 * costs more than a lookup), read again by its presented value once the configuration changed, and ended (`endForPolicy`, 1008) as a new request would be refused (deleted,
 * rotated, disabled, expired, its model or Group no longer visible, quota), at most once.
 */
export function followSessionKey(
  deps: { snapshot: ConfigSnapshot; quota: QuotaMeter; ticker: SessionTicker; clock(): number },
  admitted: AdmittedKey,
  pricing: SessionPricing,
  endForPolicy: (code: string) => void,
): SessionKeyFollower {
  const { snapshot, quota } = deps;
  let key = admitted.key;
  let stopped = false;
  const end = (code: string) => {
    if (stopped) return;
    stopped = true;
    endForPolicy(code);
  };
  const closeSession = quota.openSession(admitted.key.id, admitted.startedAt);
  // A key with a tokens or cost quota: the session ends (1008) once its own usage goes past one.
  const checkQuota = () => {
    const used = pricing.usage?.result();
    if (stopped || used === undefined || !quota.sessionOver(key, deps.clock(), admitted.startedAt, used.input_tokens + used.output_tokens, computeCost(used, pricing.price))) return;
    end('quota_exceeded');
  };
  const followKey = async (): Promise<void> => {
    const now = deps.clock();
    const reread = snapshot.currentAccessKey(admitted.presented, key);
    const current = reread === key ? key : await reread;
    if (stopped) return;
    if (!current) return end('access_key_invalid');
    try {
      checkAccessKey(current, admitted.protocol, now);
    } catch (err) {
      return end(dataPlaneFailure(err).code);
    }
    if (current === key) return;
    if (!modelVisibleTo(current, admitted.model) || !groupVisibleTo(current, admitted.group)) return end('model_not_visible');
    await quota.load(current, now);
    key = current;
    checkQuota();
  };
  // A store that cannot be read now is read again at the next turn.
  const follow = () => void followKey().catch(() => undefined);
  const unwatch = deps.ticker.add(follow);
  // A period that turned while the session was being set up may have been let go before it was opened: read again if so.
  void quota.load(key, deps.clock()).catch(() => undefined);
  return {
    onUsage: () => {
      if (snapshot.cachedAccessKey(admitted.presented) === key) checkQuota();
      else follow();
    },
    stop: () => {
      stopped = true;
      unwatch();
      closeSession();
    },
  };
}
