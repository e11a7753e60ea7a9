import type { IncomingHttpHeaders } from 'node:http';

/**
 * The openai and anthropic SDKs send their own timeout in whole seconds (truncated). Their timer,
 * started first, covers the whole request, failovers included: with each attempt given the
 * gateway's full headers timeout, it ran out first, and the SDK sent the prompt again (twice
 * more by default) rather than reading the gateway's 504 that says not to.
 */
const SDK_TIMEOUT_HEADER = 'x-stainless-timeout';
/** The gateway answers this much before the SDK would give up: its timer started earlier. */
const MARGIN_MS = 1000;
/** The first attempt waits at least this long (the SDK may then run out first). */
const FLOOR_MS = 1000;
/**
 * No attempt after the first starts with less left: an upstream that failed fast leaves a
 * short SDK timeout (2 s, 1 s of it the margin) time for another; much less could hardly be
 * answered and would send the prompt again for nothing.
 */
const LATER_FLOOR_MS = 250;

/** When the gateway must have answered for the SDK not to give up first (clock time), or undefined when it sent no timeout. */
export function clientDeadline(headers: IncomingHttpHeaders, arrivedAt: number): number | undefined {
  const given = headers[SDK_TIMEOUT_HEADER];
  if (given === undefined) return undefined;
  const seconds = Number(given);
  if (!Number.isFinite(seconds) || seconds <= 0) return undefined;
  return arrivedAt + seconds * 1000 - MARGIN_MS;
}

/**
 * The headers timeout of an attempt starting now: the setting, or, for a request with a
 * deadline, what is left of it when that is shorter (the first attempt at least FLOOR_MS).
 * Undefined for a later attempt with less than LATER_FLOOR_MS left. The clock is read only
 * for a deadline.
 */
export function attemptHeadersTimeout(settingMs: number, deadline: number | undefined, now: () => number, first: boolean): number | undefined {
  if (deadline === undefined) return settingMs;
  const left = deadline - now();
  if (first) return Math.min(settingMs, Math.max(left, FLOOR_MS));
  if (left < LATER_FLOOR_MS) return undefined;
  return Math.min(settingMs, left);
}
