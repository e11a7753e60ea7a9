import { REFUSAL_REASONS } from '../../engine/index.ts';
import type { StreamFailure } from '../../streaming/index.ts';
import { watchIdle, type IdleWatcher } from '../../streaming/index.ts';
import { errorShapeOf } from '../error-shape-table.ts';
import type { RelayContext } from './relay-context.ts';

const MESSAGES: Readonly<Record<string, string>> = {
  upstream_idle_timeout: 'The upstream stopped sending; the answer was ended.',
  shutting_down: 'The gateway is shutting down; the answer was ended.',
};

/** The HTTP status a stream's failure is answered with when it comes before the stream's first byte; 502 for a break. */
const STATUSES: Readonly<Record<string, number>> = {
  upstream_idle_timeout: REFUSAL_REASONS.upstream_timeout.status,
  shutting_down: REFUSAL_REASONS.shutting_down.status,
};

/**
 * A stream's failure as its error event names it, by the status its HTTP answer would have had;
 * a plain body's failure before its first byte is answered with the same words.
 */
export function streamFailureOf(code: string): StreamFailure {
  const status = streamFailureStatus(code);
  return { code, message: MESSAGES[code] ?? "The upstream's answer broke off.", status, words: errorShapeOf(status) };
}

export function streamFailureStatus(code: string): number {
  return STATUSES[code] ?? REFUSAL_REASONS.upstream_unreachable.status;
}

/**
 * Ends a stream that stays silent for the idle timeout, recording why: the upstream stopped
 * sending, or the client stopped reading (`client_stalled`; the upstream was paused for it).
 */
export function watchUpstreamIdle(relay: RelayContext): IdleWatcher {
  return watchIdle(relay.options.idleTimeoutMs, (held) => {
    relay.fail(held ? 'client_stalled' : 'upstream_idle_timeout');
    relay.reply.abort();
  });
}
