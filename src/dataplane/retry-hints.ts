/** Obeyed by the openai and anthropic SDKs: no retry of this refusal. */
export const NO_RETRY: Readonly<Record<string, string>> = Object.freeze({ 'x-should-retry': 'false' });

/** A wait as a client is told it: `Retry-After` in whole seconds (rounded up, at least 1) and `retry-after-ms`. */
export function retryAfterHeaders(waitMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(waitMs));
  return { 'retry-after': String(Math.ceil(ms / 1000)), 'retry-after-ms': String(ms) };
}

/**
 * Puts the pool's retry hint in a passed-on answer's headers (in place) instead of its own
 * `retry-after` and `retry-after-ms`; an empty hint (a credential is usable now) just removes them.
 * The answer's other headers stay as sent.
 */
export function replaceRetryHint(headers: Record<string, unknown>, hint: Readonly<Record<string, string>>): void {
  delete headers['retry-after'];
  delete headers['retry-after-ms'];
  Object.assign(headers, hint);
}
