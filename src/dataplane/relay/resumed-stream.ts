const WHOLE_NUMBER = /^\d+$/;

/**
 * The sequence number that follows a responses retrieve's `starting_after` (its query from the
 * `?`): undefined without one, or when it is no whole number whose next a JS number holds
 * exactly (the upstream judges such a value; the gateway guesses no numbering and takes the
 * stream as not resumed).
 */
export function resumedFirstSequence(search: string): number | undefined {
  const after = new URLSearchParams(search).get('starting_after');
  if (after === null || !WHOLE_NUMBER.test(after)) return undefined;
  const next = Number(after) + 1;
  return Number.isSafeInteger(next) ? next : undefined;
}
