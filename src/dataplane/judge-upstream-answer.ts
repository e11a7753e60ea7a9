import type { OperationEntry } from '../generated/index.ts';
import type { HeaderMap } from '../upstream/index.ts';
import { verdictFor, type CredentialVerdict } from './credential-pool.ts';
import { FAILOVER_STATUSES, REJECTED_BEFORE_PROCESSING } from './failover-statuses.ts';
import { credentialReason, readGoogleError } from './google-error-reasons.ts';

/** What an upstream error answer means: for the credential, and whether another one may be tried. */
export interface AnswerJudgement {
  failsOver: boolean;
  /** The upstream provably refused the request before processing it: another may be sent even when it is not replay_safe. */
  rejectedBeforeProcessing: boolean;
  verdict: CredentialVerdict;
}

/** Whether an operation's error answers are to be read before they are judged: Google's error shape says more than its status. */
export const judgedByBody = (op: OperationEntry): boolean => op.error_style === 'generate';

/**
 * Judges an upstream error answer. In the generate style, `body` (the answer's body, read whole,
 * when it was) in Google's error shape decides first: an ErrorInfo reason that condemns the key
 * (google-error-reasons.ts) disables it and fails over, whatever the status (400 for an invalid
 * or expired key); a 401/403 without one is about what the request asked for (a file, a cached
 * content or a tuned model that is not the key's, or gone) and goes to the client as sent, no
 * verdict; RetryInfo's `retryDelay` is the cooldown when no retry header gives one. Any other
 * answer (another style, another body) is judged by its status.
 */
export function judgeUpstreamAnswer(status: number, headers: HeaderMap, op: OperationEntry, body: Buffer | undefined, clientHeaders: HeaderMap, cooldownSeconds: number, now: number): AnswerJudgement {
  const google = body !== undefined && judgedByBody(op) ? readGoogleError(body) : undefined;
  if (google !== undefined && (status === 400 || status === 401 || status === 403)) {
    const reason = credentialReason(google, clientHeaders);
    if (reason !== undefined) return { failsOver: true, rejectedBeforeProcessing: true, verdict: { action: 'disable', reason: `upstream answered ${status} ${reason}` } };
    if (status !== 400) return { failsOver: false, rejectedBeforeProcessing: false, verdict: { action: 'none' } };
  }
  const failsOver = FAILOVER_STATUSES(status, op);
  return {
    failsOver,
    rejectedBeforeProcessing: REJECTED_BEFORE_PROCESSING(status),
    verdict: failsOver ? verdictFor(status, headers, cooldownSeconds, now, google?.retryDelayMs) : { action: 'none' },
  };
}
