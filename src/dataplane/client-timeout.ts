import type { IncomingHttpHeaders } from 'node:http';
import type { ForwardDeps } from './forward-native.ts';

/**
 * The openai and anthropic SDKs send their own timeout in whole seconds (truncated): with the
 * gateway's headers timeout as long or longer (a timeout the request sets below the setting), the SDK's timer,
 * started first, always ran out first, and it sent the prompt again (twice more by default)
 * rather than reading the gateway's 504 that says not to.
 */
const SDK_TIMEOUT_HEADER = 'x-stainless-timeout';
/** The gateway answers this much before the SDK would give up: its timer started earlier. */
const MARGIN_MS = 1000;
/** Never shorter than this, however short the SDK's timeout (which then runs out first anyway). */
const FLOOR_MS = 1000;

/** Forwarding's dependencies with the headers timeout shortened to answer within the client SDK's own timeout, when it sent one. */
export function withinClientTimeout(deps: ForwardDeps, headers: IncomingHttpHeaders): ForwardDeps {
  const given = headers[SDK_TIMEOUT_HEADER];
  if (given === undefined) return deps;
  const seconds = Number(given);
  if (!Number.isFinite(seconds) || seconds <= 0) return deps;
  const headersTimeoutMs = Math.max(seconds * 1000 - MARGIN_MS, FLOOR_MS);
  return headersTimeoutMs < deps.headersTimeoutMs ? { ...deps, headersTimeoutMs } : deps;
}
