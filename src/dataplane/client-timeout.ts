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
/** No attempt waits less (the SDK may then run out first); none after the first starts with less left. */
const FLOOR_MS = 1000;

/** When the gateway must have answered for the SDK not to give up first (clock time), or undefined when it sent no timeout. */
export function clientDeadline(headers: IncomingHttpHeaders, arrivedAt: number): number | undefined {
  const given = headers[SDK_TIMEOUT_HEADER];
  if (given === undefined) return undefined;
  const seconds = Number(given);
  if (!Number.isFinite(seconds) || seconds <= 0) return undefined;
  return arrivedAt + seconds * 1000 - MARGIN_MS;
}

/**
 * The headers timeout of an attempt starting at `now` for a request with a deadline: the
 * setting, or what is left of the deadline when that is shorter (the first attempt at least the
 * floor). Undefined for a later attempt with less than the floor left: it could hardly be
 * answered in time, and would send the prompt again for nothing.
 */
export function attemptHeadersTimeout(settingMs: number, deadline: number, now: number, first: boolean): number | undefined {
  const left = deadline - now;
  if (left < FLOOR_MS && !first) return undefined;
  return Math.min(settingMs, Math.max(left, FLOOR_MS));
}
