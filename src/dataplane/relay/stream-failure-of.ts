import type { StreamFailure } from '../../streaming/index.ts';
import { watchIdle, type IdleWatcher } from '../../streaming/index.ts';
import type { RelayContext } from './relay-context.ts';

const MESSAGES: Readonly<Record<string, string>> = {
  upstream_idle_timeout: 'The upstream stopped sending; the stream was ended.',
  shutting_down: 'The gateway is shutting down; the stream was ended.',
};

export function streamFailureOf(code: string): StreamFailure {
  return { kind: code === 'upstream_idle_timeout' ? 'timeout' : 'upstream', code, message: MESSAGES[code] ?? 'The upstream stream broke off.' };
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
