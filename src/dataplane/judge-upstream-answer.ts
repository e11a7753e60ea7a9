import type { OperationEntry } from '../generated/index.ts';
import type { HeaderMap } from '../upstream/index.ts';
import { verdictFor, type CredentialVerdict, type VerdictCooldowns } from './credential-pool.ts';
import { FAILOVER_STATUSES, REJECTED_BEFORE_PROCESSING } from './failover-statuses.ts';
import { credentialReason, readGoogleError } from './google-error-reasons.ts';
import { readRefusal } from './error-codes-not-the-key.ts';
import { refusalMessageClass } from './refusal-messages-not-the-key.ts';
import { saysKeyRefused } from './key-refusals-with-400.ts';
import { bodyRateLimitHeaders } from './rate-limit-reset-headers.ts';
import { messageResetMs } from './limit-reset-in-message.ts';

/** What an upstream error answer means: for the credential, and whether another one may be tried. */
export interface AnswerJudgement {
  failsOver: boolean;
  /** The upstream provably refused the request before processing it: another may be sent even when it is not replay_safe. */
  rejectedBeforeProcessing: boolean;
  verdict: CredentialVerdict;
}

/**
 * Whether an error answer is to be read before it is judged, because its body says more than its
 * status: any in Google's shape (generate style), and a 400/401/403/404 or 5xx in OpenAI's or
 * Anthropic's (completions and messages styles, whose other statuses the status alone judges): a
 * 400 is how Anthropic, xAI and DashScope say that the key is refused or its account out of
 * credit, a 500 how MiniMax says the latter, a 404 how Volcengine Ark says that the key's account
 * has not activated a model. A completions-style 429 too, for its cooldown alone: Gemini's
 * OpenAI-compatible endpoint gives RetryInfo in Google's shape, OpenRouter its own limit's reset
 * in `error.metadata.headers`, Zhipu the date of its usage limit's reset in the message.
 */
export const judgedByBody = (op: OperationEntry, status: number): boolean =>
  op.error_style === 'generate' ||
  (op.error_style === 'completions' && status === 429) ||
  ((op.error_style === 'completions' || op.error_style === 'messages') && (status === 400 || status === 401 || status === 403 || status === 404 || status >= 500));

/**
 * Judges an upstream error answer. `body` (the answer's body, read whole, when it was) in Google's
 * error shape decides first: an ErrorInfo reason that condemns the key, or with none a message
 * that does (google-error-reasons.ts), disables it and fails over, whatever the status (400 for
 * an invalid or expired key, in the generate style and from Gemini's OpenAI-compatible endpoint
 * alike); in the generate style a 401/403 without one is about what the request asked for (a file,
 * a cached content or a tuned model that is not the key's, or gone) and goes to the client as
 * sent, no verdict; one that refuses the caller's location (400 FAILED_PRECONDITION) moves on
 * to the next key or Group with no verdict, as in the other styles; RetryInfo's `retryDelay` is
 * the cooldown when no retry header gives one. A
 * completions- or messages-style 400 whose message refuses the key (key-refusals-with-400.ts:
 * xAI's invalid key, Groq's restricted and Anthropic's disabled organization) disables it as a
 * 401 does. In the
 * completions and messages styles, a 401/403 whose code, type or message is about the request or
 * the gateway's location (error-codes-not-the-key.ts: a model the project may not use, flagged
 * input, an unsupported region, a firewall's web page) moves on to the next key or Group with no
 * verdict (the last such answer goes to the client as sent); one about the account's credit cools
 * the key down and moves on, as a 402; any other disables, its reason naming that code. Any other answer
 * (another style, another body) is judged by its status.
 */
export function judgeUpstreamAnswer(status: number, headers: HeaderMap, op: OperationEntry, body: Buffer | undefined, clientHeaders: HeaderMap, cooldowns: VerdictCooldowns, now: number): AnswerJudgement {
  const read = body !== undefined && judgedByBody(op, status) ? body : undefined;
  // Read in the completions style too: Gemini's OpenAI-compatible endpoint refuses an invalid key
  // 400 in Google's shape (as a JSON array's one element), API_KEY_INVALID.
  const google = read !== undefined ? readGoogleError(read) : undefined;
  if (google !== undefined && (status === 400 || status === 401 || status === 403)) {
    const reason = credentialReason(google, clientHeaders);
    if (reason !== undefined) return { failsOver: true, rejectedBeforeProcessing: true, verdict: { action: 'disable', reason: `upstream answered ${status} ${reason}` } };
    // Google refuses the caller's location 400 FAILED_PRECONDITION: the gateway's egress address, which another key's proxy may change.
    if (refusalMessageClass(google.message) === 'location') return NOT_THE_KEYS_FAULT;
    if (status !== 400 && op.error_style === 'generate') return NOT_THE_KEYS;
  }
  // A 429 is judged by its status: its body is read for the cooldown only.
  const refusal = read !== undefined && status !== 429 && (op.error_style === 'completions' || op.error_style === 'messages') ? readRefusal(status, headers, read, op.error_style) : undefined;
  // A 5xx is the upstream's own failure, whatever its message says of the request or a region; only one about the account's credit is the key's.
  const notTheKey = status >= 500 && refusal?.notTheKey !== 'billing' ? undefined : refusal?.notTheKey;
  if (status === 400 && read !== undefined && (op.error_style === 'completions' || op.error_style === 'messages') && saysKeyRefused(read, op.error_style)) {
    return { failsOver: true, rejectedBeforeProcessing: true, verdict: { action: 'disable', reason: `upstream answered 400${refusal?.code === undefined ? '' : ` ${refusal.code}`}` } };
  }
  // Anthropic answers an account out of credit 400 invalid_request_error ("Your credit balance is
  // too low…"), DashScope 400 Arrearage: about the key's account, not the request, so it fails over as a 402 would.
  // Ark answers a model the account has not activated 404 ModelNotOpen: another account's key may serve it.
  const failsOver = FAILOVER_STATUSES(status, op) || (status === 400 && notTheKey === 'billing') || (status === 404 && refusal?.accountNotFound === true);
  // Out of credit or over a spending cap: as a 402, the key cools down (for its credit's time, not
  // a 5xx's few seconds) while the next is tried, also from an operation not replay_safe.
  if (failsOver && notTheKey === 'billing') return { failsOver, rejectedBeforeProcessing: true, verdict: verdictFor(402, headers, cooldowns, now) };
  // Another key (another project, another proxy) or Group may be allowed: tried, but none blamed.
  if (failsOver && notTheKey !== undefined) return NOT_THE_KEYS_FAULT;
  // A 429's body may say when its limit resets: RetryInfo, OpenRouter's headers, Zhipu's dated message.
  const limitRead = status === 429 ? read : undefined;
  const hintHeaders = limitRead === undefined ? headers : { ...bodyRateLimitHeaders(limitRead), ...headers };
  const bodyDelayMs = google?.retryDelayMs ?? (limitRead === undefined ? undefined : messageResetMs(limitRead, now));
  return {
    failsOver,
    rejectedBeforeProcessing: REJECTED_BEFORE_PROCESSING(status),
    verdict: failsOver ? verdictFor(status, hintHeaders, cooldowns, now, bodyDelayMs, refusal?.code) : { action: 'none' },
  };
}

/** An answer about what the request asked for, not about the key: to the client as sent. */
const NOT_THE_KEYS: AnswerJudgement = Object.freeze({ failsOver: false, rejectedBeforeProcessing: false, verdict: Object.freeze({ action: 'none' }) });

/** A refusal that another key or Group may not meet, though it is not this key's fault: the next is tried, no verdict. */
const NOT_THE_KEYS_FAULT: AnswerJudgement = Object.freeze({ failsOver: true, rejectedBeforeProcessing: true, verdict: Object.freeze({ action: 'none' }) });
