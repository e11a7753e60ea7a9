const WHOLE_NUMBER = /^\d+$/;

/** The `starting_after` of a responses retrieve's query, as sent; null without one (resumed only when sequenceAfter reads it). */
export function startingAfter(search: string): string | null {
  return new URLSearchParams(search).get('starting_after');
}

/**
 * The sequence number that follows `after`: undefined when it is no whole number whose next a
 * JS number holds exactly (the upstream judges such a value; the gateway guesses no numbering).
 */
export function sequenceAfter(after: string): number | undefined {
  if (!WHOLE_NUMBER.test(after)) return undefined;
  const next = Number(after) + 1;
  return Number.isSafeInteger(next) ? next : undefined;
}
