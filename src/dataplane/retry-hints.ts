import type { CredentialView } from '../store/records.ts';
import type { CredentialPool } from './credential-pool.ts';

/** Obeyed by the openai and anthropic SDKs: no retry of this refusal. */
export const NO_RETRY: Readonly<Record<string, string>> = Object.freeze({ 'x-should-retry': 'false' });

/** A wait as a client is told it: `Retry-After` in whole seconds (rounded up, at least 1) and `retry-after-ms`. */
export function retryAfterHeaders(waitMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(waitMs));
  return { 'retry-after': String(Math.ceil(ms / 1000)), 'retry-after-ms': String(ms) };
}

/** The headers a retry hint is made of: the pool's hint decides all of them, or none. */
const RETRY_HINT_HEADERS = ['retry-after', 'retry-after-ms', 'x-should-retry'];
/** What an empty hint takes away: the waits, not the answer's own word on whether to retry at all. */
const WAIT_HEADERS = ['retry-after', 'retry-after-ms'];

/**
 * Puts the pool's retry hint in a passed-on answer's headers (in place) instead of its own
 * `retry-after`, `retry-after-ms` and `x-should-retry` (an upstream's `x-should-retry: false`
 * beside the pool's short wait would make the SDKs raise at once); an empty hint (a credential
 * is usable now) removes only the waits, and none (undefined) leaves them as sent. The answer's
 * other headers stay as sent.
 */
export function replaceRetryHint<T extends Record<string, unknown>>(headers: T, hint: Readonly<Record<string, string>> | undefined): T {
  if (hint === undefined) return headers;
  for (const name of Object.keys(hint).length === 0 ? WAIT_HEADERS : RETRY_HINT_HEADERS) delete headers[name];
  return Object.assign(headers, hint);
}

/**
 * The retry hint the request's last answer (an upstream's error passed on, or the gateway's own
 * failure of an attempt) takes in place of its own: when no credential of the candidate Groups
 * is usable after the attempts' verdicts (`judged`, the credentials as those left them), the
 * pool's (its earliest recovery, `x-should-retry: false` when that is far or never), so that an
 * SDK's automatic retry neither comes back to a `no_available_credential` that hides the real
 * cause nor sleeps as long as the last of several credentials asked; after several attempts with
 * a credential still usable, none (an empty hint); else undefined: one credential's own hint
 * stays as it sent it.
 */
export function lastAnswerHint(
  pool: Pick<CredentialPool, 'anyUsable' | 'retryHeaders'>,
  groups: readonly { id: number; channel: string }[],
  credentialsOf: (groupId: number) => readonly CredentialView[],
  judged: readonly CredentialView[],
  attempts: number,
  now: number,
): Readonly<Record<string, string>> | undefined {
  // The pool folds the few judged views into its indexes: no copy of a Group per answer.
  if (!pool.anyUsable(groups, credentialsOf, now, judged)) return pool.retryHeaders(groups, credentialsOf, now, judged);
  return attempts > 1 ? {} : undefined;
}
